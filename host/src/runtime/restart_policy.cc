// See restart_policy.h.
#include "runtime/restart_policy.h"

#include <algorithm>

namespace warren::runtime {

void RestartPolicy::started(Clock::time_point at) noexcept {
  last_start_ = at;
  ever_started_ = true;
}

RestartPolicy::Duration RestartPolicy::died(Clock::time_point at, bool blamed_a_message,
                                            double random_unit) {
  if (ever_started_ && at - last_start_ >= limits_.healthy_after)
    deaths_in_a_row_ = 0;
  ++deaths_in_a_row_;

  if (!blamed_a_message) {
    unblamed_deaths_.push_back(at);
    while (!unblamed_deaths_.empty() && at - unblamed_deaths_.front() > limits_.loop_window)
      unblamed_deaths_.pop_front();
    if (static_cast<int>(unblamed_deaths_.size()) >= limits_.loop_deaths)
      crash_loop_ = true;
  }

  // first * 2^(deaths - 1), without overflowing on a long run of deaths.
  Duration delay = limits_.first;
  for (int i = 1; i < deaths_in_a_row_ && delay < limits_.max; ++i)
    delay *= 2;
  delay = std::min(delay, limits_.max);
  const double stretch = 1.0 + 0.25 * std::clamp(random_unit, 0.0, 1.0);
  const auto jittered =
      Duration(static_cast<Duration::rep>(static_cast<double>(delay.count()) * stretch));
  return std::min(jittered, limits_.max);
}

}  // namespace warren::runtime
