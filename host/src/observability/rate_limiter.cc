// Token-bucket admission; see rate_limiter.h.
#include "observability/rate_limiter.h"

#include <algorithm>

namespace warren::observability {

RateLimiter::Decision RateLimiter::admit(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = buckets_.try_emplace(key);
  Bucket& bucket = it->second;
  if (inserted) {
    bucket.tokens = burst_;
    bucket.last = now;
  }
  const double elapsed = std::chrono::duration<double>(now - bucket.last).count();
  bucket.tokens = std::min(burst_, bucket.tokens + std::max(0.0, elapsed) * per_second_);
  bucket.last = now;
  if (bucket.tokens < 1.0) {
    ++bucket.suppressed;
    return Decision{false, 0};
  }
  bucket.tokens -= 1.0;
  Decision decision{true, bucket.suppressed};
  bucket.suppressed = 0;
  return decision;
}

std::vector<std::pair<std::string, std::uint64_t>> RateLimiter::take_suppressed() {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::uint64_t>> taken;
  for (auto& [key, bucket] : buckets_) {
    if (bucket.suppressed > 0) {
      taken.emplace_back(key, bucket.suppressed);
      bucket.suppressed = 0;
    }
  }
  return taken;
}

}  // namespace warren::observability
