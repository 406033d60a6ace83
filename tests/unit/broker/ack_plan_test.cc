// Specification of ack coalescing: one `multiple` ack never covers an unsettled delivery.
#include "broker/ack_plan.h"

#include <gtest/gtest.h>

namespace warren::broker {
namespace {

TEST(AckPlan, EverythingSettled_IsOneMultipleAckUpToTheHighestTag) {
  const auto plan = plan_acks({3, 1, 2}, {});
  EXPECT_EQ(plan.multiple_up_to, 3u);
  EXPECT_TRUE(plan.singles.empty());
}

TEST(AckPlan, AckedTagsAboveAnUnsettledDelivery_AreAckedOneByOne) {
  const auto plan = plan_acks({1, 2, 5, 7}, {4, 6});
  EXPECT_EQ(plan.multiple_up_to, 2u);
  EXPECT_EQ(plan.singles, (std::vector<std::uint64_t>{5, 7}));
}

TEST(AckPlan, OldestDeliveryStillRunning_NoMultipleAck) {
  const auto plan = plan_acks({8, 9}, {7});
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_EQ(plan.singles, (std::vector<std::uint64_t>{8, 9}));
}

TEST(AckPlan, NothingAcked_NothingToSend) {
  const auto plan = plan_acks({}, {1, 2});
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_TRUE(plan.singles.empty());
}

}  // namespace
}  // namespace warren::broker
