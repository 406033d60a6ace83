// What the scripted test plugin does with one message, parsed from text such as "retry:250"
// (taken from the x-test-action header, else the default_action setting).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace warren::test_plugins {

struct ScriptedAction {
  enum class Kind {
    ack,          // ack
    retry,        // retry            (the worker's policy decides the delay)
    retry_after,  // retry:<ms>
    dead_letter,  // dead_letter:<reason>
    throw_std,    // throw            std::runtime_error("scripted failure")
    throw_int,    // throw_int        throw 42
    permanent,    // permanent        warren::PermanentError("scripted permanent failure")
    sleep,        // sleep:<ms>       then ack; never cut short by a stop request
    abort,        // abort            std::abort()
    segfault,     // segfault         a write to a read-only page: a real SIGSEGV (SEGV_ACCERR)
    fail_until,   // fail_until:<n>   throw while attempt < n, then ack
    publish,      // publish:<exchange>:<routing_key>  publish the same body, then ack
    notify,       // notify:<exchange>:<routing_key>   the same, with mandatory = false
    ack_if_file,  // ack_if_file:<path>  ack if the file exists, else throw
    hog,          // hog              allocate without limit until an allocation fails (faults.h)
    spin,         // spin             loop forever, ignoring stop requests (faults.h)
  };

  Kind kind = Kind::ack;
  std::chrono::milliseconds duration{0};  // retry_after, sleep
  std::uint32_t attempts = 0;             // fail_until
  std::string text;                       // dead_letter: reason; ack_if_file: path
  std::string exchange;                   // publish, notify (may be empty: the default exchange)
  std::string routing_key;                // publish, notify; may contain ':'

  // Throws std::invalid_argument naming the text and listing the valid actions.
  static ScriptedAction parse(std::string_view spec);
};

}  // namespace warren::test_plugins
