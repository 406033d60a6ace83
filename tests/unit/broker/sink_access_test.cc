// Specification of SinkAccess: a retired subscription's sink is never called again, and the
// retirement waits for the calls already under way (a reload destroys the sink right after).
#include "broker/sink_access.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace warren::broker {
namespace {

using namespace std::chrono_literals;

class NullSink final : public transport::DeliverySink {
 public:
  void deliver(std::unique_ptr<transport::Delivery>) override {}
};

class SinkAccessTest : public ::testing::Test {
 protected:
  void SetUp() override { access_.reset({{"a", "qa", 10, &a_, ""}, {"b", "qb", 10, &b_, ""}}); }
  NullSink a_, b_;
  SinkAccess access_;
};

TEST_F(SinkAccessTest, Enter_GivesTheSubscriptionsSinkUntilItIsRetired) {
  {
    const SinkAccess::Use use = access_.enter(1);
    ASSERT_TRUE(use);
    EXPECT_EQ(&*use, &b_);
  }
  access_.retire([](std::size_t index) { return index == 1; });
  EXPECT_FALSE(access_.enter(1));
  EXPECT_TRUE(access_.enter(0));  // the other one is untouched
}

TEST_F(SinkAccessTest, Retire_WaitsForACallUnderWayAndNotForOtherSinks) {
  auto use_of_a = std::make_unique<SinkAccess::Use>(access_.enter(0));
  const SinkAccess::Use use_of_b = access_.enter(1);  // b is not retired: no wait for it
  std::atomic<bool> retired{false};
  auto retiring = std::async(std::launch::async, [&] {
    access_.retire([](std::size_t index) { return index == 0; });
    retired = true;
  });
  // It cannot return while the call into a is under way (and a new call is refused already).
  EXPECT_EQ(retiring.wait_for(100ms), std::future_status::timeout);
  EXPECT_FALSE(retired.load());
  use_of_a.reset();
  EXPECT_EQ(retiring.wait_for(60s), std::future_status::ready);
  EXPECT_TRUE(retired.load());
  EXPECT_FALSE(access_.enter(0));
}

TEST_F(SinkAccessTest, RetireAll_WithNoCallUnderWay_ReturnsAtOnce) {
  access_.retire([](std::size_t) { return true; });
  EXPECT_FALSE(access_.enter(0));
  EXPECT_FALSE(access_.enter(1));
}

}  // namespace
}  // namespace warren::broker
