// When a failed outbox row is tried again, and when it is given up: exponential backoff from
// `initial` doubling up to `max` ([[outbox]] backoff, the shared transport/backoff.h without
// jitter), dead after `max_attempts` failures.
#pragma once

#include <chrono>

#include "transport/backoff.h"

namespace warren::outbox {

class RetrySchedule {
 public:
  RetrySchedule(int max_attempts, std::chrono::milliseconds initial, std::chrono::milliseconds max);

  struct AfterFailure {
    int attempts = 0;  // failures including this one
    bool dead = false;
    std::chrono::milliseconds retry_in{0};  // when not dead
  };
  // What becomes of a row that had `failures_before` failures and just failed again.
  AfterFailure after_failure(int failures_before) const;

  // The wait after the n-th failure (n >= 1): initial * 2^(n-1), at most max.
  std::chrono::milliseconds delay_after(int failures) const;

  int max_attempts() const noexcept { return max_attempts_; }

 private:
  int max_attempts_;
  transport::BackoffPolicy backoff_;
};

}  // namespace warren::outbox
