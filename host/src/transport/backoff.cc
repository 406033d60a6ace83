// See backoff.h.
#include "transport/backoff.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace warren::transport {
namespace {

using std::chrono::milliseconds;

milliseconds step_after(const BackoffPolicy& policy, std::uint32_t failures) {
  switch (policy.growth) {
    case BackoffPolicy::Growth::none:
      return milliseconds(0);
    case BackoffPolicy::Growth::fixed:
      return std::min(policy.initial, policy.max);
    case BackoffPolicy::Growth::exponential:
      break;
  }
  // Stop doubling once at max: no overflow however many failures.
  const std::uint32_t doublings = failures == 0 ? 0 : failures - 1;
  milliseconds step = policy.initial;
  for (std::uint32_t i = 0; i < doublings && step < policy.max && step.count() > 0; ++i)
    step *= 2;
  return std::min(step, policy.max);
}

}  // namespace

milliseconds BackoffPolicy::delay_after(std::uint32_t failures, double random01) const {
  const milliseconds step = step_after(*this, failures);
  if (jitter <= 0 || step.count() <= 0)
    return step;
  const double stretch = std::clamp(jitter, 0.0, 1.0) * std::clamp(random01, 0.0, 1.0);
  const double stretched = std::ceil(static_cast<double>(step.count()) * (1.0 + stretch));
  constexpr double kLongest = static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2);
  return milliseconds(static_cast<std::int64_t>(std::min(stretched, kLongest)));
}

BackoffPolicy reconnect_policy(milliseconds initial, milliseconds max) {
  BackoffPolicy policy;
  policy.growth = BackoffPolicy::Growth::exponential;
  policy.initial = std::max(milliseconds(1), initial);
  policy.max = std::max(policy.initial, max);
  policy.jitter = kReconnectJitter;
  return policy;
}

milliseconds Backoff::next(double random01) {
  if (failures_ < std::numeric_limits<std::uint32_t>::max())
    ++failures_;
  return policy_.delay_after(failures_, random01);
}

}  // namespace warren::transport
