// Where a worker's handler runs (issue 14): `isolation = "thread"` (the default) runs it in
// `concurrency` threads of the host; `isolation = "process"` in `processes` warren-worker
// children, one message at a time each, with the keys that only a child can honour (timeouts that
// kill it, its memory limit, its start-up deadline). A key of the other mode is refused rather
// than ignored, so that a config never promises a limit nothing enforces.
#include <string>
#include <string_view>

#include "config/byte_size.h"
#include "config/duration.h"
#include "config/loader_sections.h"

namespace warren::config {
namespace {

// Below this a child cannot even load the host's libraries and a plugin.
constexpr std::uint64_t kMinimumMemoryMax = 1024 * 1024;

constexpr std::string_view kProcessOnlyKeys[] = {"soft_timeout", "hard_timeout", "memory_max",
                                                 "startup_timeout"};

// Concurrency or processes: either is a number of messages handled at once, so neither may
// exceed what the broker delivers to the worker.
void check_within_prefetch(TableReader& entry, std::string_view key, int value, int prefetch) {
  if (value > prefetch) {
    entry.report(key, "must not exceed prefetch (" + std::to_string(prefetch) +
                          "): a worker can only work on messages the broker has delivered to "
                          "it; got " +
                          std::to_string(value));
  }
}

void read_thread_keys(TableReader& entry, WorkerConfig& worker) {
  if (entry.read_integer("concurrency", worker.concurrency, 1, 1024)) {
    check_within_prefetch(entry, "concurrency", worker.concurrency, worker.prefetch);
  }
  if (entry.find("processes") != nullptr) {
    entry.report("processes",
                 "needs isolation = \"process\"; with isolation = \"thread\", set concurrency");
  }
  for (const std::string_view key : kProcessOnlyKeys) {
    if (entry.find(key) != nullptr) {
      entry.report(key,
                   "needs isolation = \"process\": a handler in the host's threads cannot be "
                   "stopped or limited on its own");
    }
  }
}

void read_process_keys(TableReader& entry, WorkerConfig& worker) {
  if (entry.find("concurrency") != nullptr) {
    entry.report("concurrency",
                 "with isolation = \"process\" a child runs one message at a time: set processes");
  }
  if (entry.read_integer("processes", worker.processes, 1, 1024)) {
    check_within_prefetch(entry, "processes", worker.processes, worker.prefetch);
  }
  const bool has_soft = entry.read_duration("soft_timeout", worker.soft_timeout);
  const bool has_hard = entry.read_duration("hard_timeout", worker.hard_timeout);
  // 0s means "none" for either; a hard timeout at or before the soft one would kill the child
  // before (or as) it is asked to stop.
  if (has_soft && has_hard && worker.soft_timeout > Duration::zero() &&
      worker.hard_timeout > Duration::zero() && worker.hard_timeout <= worker.soft_timeout) {
    entry.report("hard_timeout", "must be greater than soft_timeout (" +
                                     format_duration(worker.soft_timeout) + "), got " +
                                     in_quotes(format_duration(worker.hard_timeout)));
  }
  entry.read_duration("startup_timeout", worker.startup_timeout, Duration(1));
  std::uint64_t memory_max = 0;
  if (entry.read_byte_size("memory_max", memory_max)) {
    if (memory_max < kMinimumMemoryMax) {
      entry.report("memory_max", "must be at least " + format_byte_size(kMinimumMemoryMax) +
                                     " (a child needs that much to load a plugin at all; leave "
                                     "memory_max out for no limit), got " +
                                     format_byte_size(memory_max));
    } else {
      worker.memory_max = memory_max;
    }
  }
}

}  // namespace

void read_worker_isolation(TableReader& entry, WorkerConfig& worker) {
  entry.read_enum<WorkerConfig::Isolation>(
      "isolation", worker.isolation,
      {{"thread", WorkerConfig::Isolation::thread}, {"process", WorkerConfig::Isolation::process}});
  if (worker.isolation == WorkerConfig::Isolation::process) {
    read_process_keys(entry, worker);
  } else {
    read_thread_keys(entry, worker);
  }
}

}  // namespace warren::config
