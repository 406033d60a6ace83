// See ack_plan.h.
#include "broker/ack_plan.h"

#include <algorithm>

namespace warren::broker {

AckPlan plan_acks(std::vector<std::uint64_t>& acked,
                  std::optional<std::uint64_t> oldest_outstanding) {
  AckPlan plan;
  if (acked.empty())
    return plan;
  std::sort(acked.begin(), acked.end());
  const std::uint64_t floor = oldest_outstanding.value_or(UINT64_MAX);
  const auto first_above = std::lower_bound(acked.begin(), acked.end(), floor);
  if (first_above != acked.begin())
    plan.multiple_up_to = *(first_above - 1);
  plan.singles.assign(first_above, acked.end());
  return plan;
}

}  // namespace warren::broker
