// See retry_schedule.h.
#include "outbox/retry_schedule.h"

#include <algorithm>

namespace warren::outbox {

RetrySchedule::RetrySchedule(int max_attempts, std::chrono::milliseconds initial,
                             std::chrono::milliseconds max)
    : max_attempts_(std::max(1, max_attempts)),
      initial_(std::max(std::chrono::milliseconds(1), initial)),
      max_(std::max(initial_, max)) {}

std::chrono::milliseconds RetrySchedule::delay_after(int failures) const {
  const int doublings = std::clamp(failures - 1, 0, 62);
  // Stop doubling once past max: no overflow however many failures.
  std::chrono::milliseconds delay = initial_;
  for (int i = 0; i < doublings && delay < max_; ++i)
    delay *= 2;
  return std::min(delay, max_);
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
