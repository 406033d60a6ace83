// Reconnect delays: exponential from `initial` to `max`, with full jitter so that many hosts
// restarting together do not reconnect in lockstep.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace warren::broker {

class ReconnectBackoff {
 public:
  ReconnectBackoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(std::max<std::int64_t>(1, initial.count())), max_(std::max(initial, max)) {}

  // The delay before the next attempt; `random01` in [0, 1).
  std::chrono::milliseconds next(double random01) {
    const std::int64_t ceiling =
        std::min<std::int64_t>(max_.count(), initial_ << std::min(attempts_, 30));
    ++attempts_;
    // At least half the ceiling, so a flapping broker is not hammered.
    return std::chrono::milliseconds(ceiling / 2 +
                                     static_cast<std::int64_t>(random01 * (ceiling / 2.0)));
  }
  void reset() { attempts_ = 0; }

 private:
  std::int64_t initial_;
  std::chrono::milliseconds max_;
  int attempts_ = 0;
};

}  // namespace warren::broker
