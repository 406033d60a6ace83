// See retry_schedule.h.
#include "outbox/retry_schedule.h"

#include <algorithm>

namespace warren::outbox {

RetrySchedule::RetrySchedule(int max_attempts, std::chrono::milliseconds initial,
                             std::chrono::milliseconds max)
    : max_attempts_(std::max(1, max_attempts)) {
  backoff_.growth = transport::BackoffPolicy::Growth::exponential;
  backoff_.initial = std::max(std::chrono::milliseconds(1), initial);
  backoff_.max = std::max(backoff_.initial, max);
  backoff_.jitter = 0;  // [[outbox]] backoff states exact delays
}

std::chrono::milliseconds RetrySchedule::delay_after(int failures) const {
  return backoff_.delay_after(static_cast<std::uint32_t>(std::max(1, failures)), 0.0);
}

RetrySchedule::AfterFailure RetrySchedule::after_failure(int failures_before) const {
  AfterFailure result;
  result.attempts = std::max(0, failures_before) + 1;
  result.dead = result.attempts >= max_attempts_;
  if (!result.dead)
    result.retry_in = delay_after(result.attempts);
  return result;
}

}  // namespace warren::outbox
