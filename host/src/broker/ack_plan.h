// Which basic.acks settle a set of acked delivery tags on one channel: one `multiple` ack for
// every acked tag below the oldest delivery still unsettled, single acks for the others. A
// `multiple` ack never covers an unsettled delivery, and no ack is held back (a held ack is a
// redelivery after a crash).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace warren::broker {

struct AckPlan {
  std::optional<std::uint64_t> multiple_up_to;  // basic.ack(tag, multiple = true)
  std::vector<std::uint64_t> singles;           // basic.ack(tag, multiple = false)
};

// `acked`: tags settled by ack since the last plan (any order; sorted in place);
// `oldest_outstanding`: the oldest tag delivered and not settled, if any.
AckPlan plan_acks(std::vector<std::uint64_t>& acked,
                  std::optional<std::uint64_t> oldest_outstanding);

}  // namespace warren::broker
