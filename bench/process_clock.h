// The clocks every benchmark side reads the same way: wall time (for rates, comparable across
// processes), the process's CPU time (user + sys, all threads) and its peak resident set.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>

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

inline long max_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace bench
