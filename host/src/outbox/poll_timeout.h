// poll(2) takes its timeout as an int of milliseconds and waits forever when it is negative: a
// longer wait (an [[outbox]] poll_interval of 25 days or more) must not wrap into "forever".
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>

namespace warren::outbox {

// `wait` as poll()'s timeout: 0 for nothing or less, at most INT_MAX ms (24.8 days).
inline int poll_timeout_ms(std::chrono::milliseconds wait) noexcept {
  return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(wait.count(), 0, INT_MAX));
}

}  // namespace warren::outbox
