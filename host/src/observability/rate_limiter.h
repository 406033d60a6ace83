// A token bucket per key: lets bursts of `burst` events through, then `per_second` a second,
// counting what it refuses so the caller can report "suppressed N" (with the next admitted event,
// or on a timer through take_suppressed()). Used against error floods
// (a poison message retried in a tight loop must not fill the disk with identical lines).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace warren::observability {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimiter(double per_second, double burst) : per_second_(per_second), burst_(burst) {}

  struct Decision {
    bool allowed = false;
    std::uint64_t suppressed_before = 0;  // refused since the last allowed event of this key
  };

  Decision admit(const std::string& key, Clock::time_point now = Clock::now());

  // The keys with refused events not yet reported, with how many; their counts restart at 0, so
  // each refused event is reported once, here or as the next admitted event's suppressed_before.
  // For a report on a timer, when a flood stops and no admitted event follows.
  std::vector<std::pair<std::string, std::uint64_t>> take_suppressed();

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point last{};
    std::uint64_t suppressed = 0;
  };

  const double per_second_;
  const double burst_;
  std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace warren::observability
