// Specification of ack coalescing: one `multiple` ack never covers an unsettled delivery.
#include "broker/ack_plan.h"

#include <gtest/gtest.h>

namespace warren::broker {
namespace {

AckPlan plan_for(std::vector<std::uint64_t> acked, std::optional<std::uint64_t> oldest) {
  return plan_acks(acked, oldest);
}

TEST(AckPlan, EverythingSettled_IsOneMultipleAckUpToTheHighestTag) {
  const auto plan = plan_for({3, 1, 2}, std::nullopt);
  EXPECT_EQ(plan.multiple_up_to, 3u);
  EXPECT_TRUE(plan.singles.empty());
}

TEST(AckPlan, AckedTagsAboveAnUnsettledDelivery_AreAckedOneByOne) {
  const auto plan = plan_for({1, 2, 5, 7}, 4);
  EXPECT_EQ(plan.multiple_up_to, 2u);
  EXPECT_EQ(plan.singles, (std::vector<std::uint64_t>{5, 7}));
}

TEST(AckPlan, OldestDeliveryStillRunning_NoMultipleAck) {
  const auto plan = plan_for({8, 9}, 7);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_EQ(plan.singles, (std::vector<std::uint64_t>{8, 9}));
}

TEST(AckPlan, NothingAcked_NothingToSend) {
  const auto plan = plan_for({}, 1);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_TRUE(plan.singles.empty());
}

}  // namespace
}  // namespace warren::broker
