// The faults a plugin can have that process isolation must survive, for the scripted plugin:
// allocating without limit, looping forever, crashing in init, crashing every Nth message. Each
// is real (pages touched, a real SIGSEGV, a loop no stop request ends): run them in a child
// process or a death test only.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

namespace warren::test_plugins {

// Allocates chunks of a few MiB with operator new, touching every page, kept in a list, until an
// allocation fails: then std::bad_alloc propagates (the list is freed on the way out), unless a
// new_handler ends the process first (warren-worker's does, "oom").
[[noreturn]] void hog_memory();

// Counts forever in a volatile counter, ignoring Context::stop_requested: only a kill ends it.
[[noreturn]] void spin_forever();

// The init_action setting: how the plugin's constructor fails.
enum class InitFault { segfault, abort, throw_std };
// Throws std::invalid_argument for anything but "segfault", "abort" or "throw".
InitFault parse_init_fault(std::string_view text);
// Crashes or throws (std::runtime_error) as FAULT says.
[[noreturn]] void fail_init(InitFault fault);

// The crash_every setting: every Nth call of one instance crashes; a new instance (a restarted
// child) counts from 0.
class CrashSchedule {
 public:
  // EVERY = std::nullopt: never. Throws std::invalid_argument for 0.
  explicit CrashSchedule(std::optional<std::uint32_t> every);
  // Counts one call; true when this call is the one to crash.
  bool crash_now() noexcept;

 private:
  std::uint32_t every_ = 0;               // 0: never
  std::atomic<std::uint64_t> calls_ = 0;  // a worker with concurrency > 1 calls from threads
};

}  // namespace warren::test_plugins
