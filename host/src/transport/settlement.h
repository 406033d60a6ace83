// What the runtime decided about one delivery; each transport carries it out its own way (a
// basic.ack, a publish into delay levels, an UPDATE of a row).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "transport/message.h"

namespace warren::transport {

struct Settlement {
  enum class Kind {
    ack,          // done
    requeue,      // give it back now, unchanged (shutdown, stale handler)
    retry_later,  // redeliver after `delay` with attempt = next_attempt
    dead_letter,  // to the worker's dead-letter exchange, with the reason
  };
  Kind kind = Kind::ack;
  std::chrono::milliseconds delay{0};
  std::uint32_t next_attempt = 0;
  std::string reason;         // dead_letter: "type: what" (x-warren-error)
  std::string worker;         // x-warren-worker
  std::uint32_t attempt = 1;  // the attempt that produced this settlement
  // Headers a republished copy (retry_later, dead_letter) carries when the message lacks them:
  // the trace context the host generated for a message that came without one.
  TextHeaders headers_if_absent;
  // Headers a republished copy carries, replacing any of the same name: what the runtime knows
  // about this failure beyond the reason (x-warren-crashes for a message that crashed the host).
  TextHeaders extra_headers;

  static Settlement ack() { return Settlement{}; }
  static Settlement requeue() {
    Settlement s;
    s.kind = Kind::requeue;
    return s;
  }
};

const char* to_string(Settlement::Kind kind) noexcept;

}  // namespace warren::transport
