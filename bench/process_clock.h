// The clocks every benchmark side reads the same way: wall time (for rates, comparable across
// processes), the process's CPU time (user + sys, all threads) and its peak resident set; and
// another process's CPU time (a worker process reading its host's and its siblings').
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace bench {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline std::int64_t cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (static_cast<std::int64_t>(usage.ru_utime.tv_sec) + usage.ru_stime.tv_sec) * 1000000000 +
         (static_cast<std::int64_t>(usage.ru_utime.tv_usec) + usage.ru_stime.tv_usec) * 1000;
}

// The CPU time of process PID so far (its live threads), in nanoseconds: the sum of the first
// field of /proc/PID/task/*/schedstat, the scheduler's own nanosecond count (the one getrusage
// reads; /proc/PID/stat would round to clock ticks). 0 when PID is gone.
inline std::int64_t process_cpu_ns(pid_t pid) {
  std::int64_t total = 0;
  std::error_code error;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
    std::ifstream schedstat(task.path() / "schedstat");
    std::int64_t on_cpu_ns = 0;
    if (schedstat >> on_cpu_ns)
      total += on_cpu_ns;
  }
  return total;
}

inline long max_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// The peak resident set of process PID so far (VmHWM of /proc/PID/status), in KiB; 0 when PID
// is gone. A worker process reads its host's.
inline long process_max_rss_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  for (long kb = 0; status >> key;) {
    if (key == "VmHWM:" && status >> kb)
      return kb;
  }
  return 0;
}

}  // namespace bench
