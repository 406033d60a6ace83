// Specification of SubscriberState, one worker's subscription on the consuming connection: a
// failure stops that worker alone and is retried on its own backoff, its reason is reported once
// however often the attempt fails the same way, and consuming again starts the backoff over and
// says it is back.
#include "broker/subscriber_state.h"

#include <gtest/gtest.h>

#include <chrono>

namespace warren::broker {
namespace {

using namespace std::chrono_literals;
using Clock = SubscriberState::Clock;

constexpr const char* kMissing = "queue 'orders' consumed by worker 'billing' does not exist";

SubscriberState billing() {
  transport::Subscription subscription;
  subscription.worker = "billing";
  subscription.queue = "orders";
  transport::BackoffPolicy retry;  // exponential, no jitter: the waits are exact
  retry.initial = 100ms;
  retry.max = 1s;
  return SubscriberState(subscription, retry);
}

TEST(SubscriberState, New_NotConsumingNoReasonAndDueAtOnce) {
  const auto state = billing();
  EXPECT_FALSE(state.consuming());
  EXPECT_EQ(state.reason(), "");
  EXPECT_TRUE(state.due(Clock::now()));
  EXPECT_EQ(state.queue(), "orders");
}

TEST(SubscriberState, SameFailureAgainAndAgain_ReportedOnceRetriedWithGrowingBackoff) {
  auto state = billing();
  const auto now = Clock::now();

  EXPECT_TRUE(state.failed(kMissing, now, 0));
  EXPECT_EQ(state.retry_at(), now + 100ms);
  EXPECT_FALSE(state.due(now + 99ms));
  EXPECT_TRUE(state.due(now + 100ms));
  EXPECT_FALSE(state.failed(kMissing, now, 0));
  EXPECT_EQ(state.retry_at(), now + 200ms);
  EXPECT_FALSE(state.failed(kMissing, now, 0));
  EXPECT_EQ(state.retry_at(), now + 400ms);
  for (int attempt = 0; attempt < 10; ++attempt)
    EXPECT_FALSE(state.failed(kMissing, now, 0));
  EXPECT_EQ(state.retry_at(), now + 1s) << "the backoff is capped";
  EXPECT_EQ(state.reason(), kMissing);
}

TEST(SubscriberState, ReasonChanges_ReportedAgain) {
  auto state = billing();
  const auto now = Clock::now();
  EXPECT_TRUE(state.failed(kMissing, now, 0));
  EXPECT_TRUE(state.failed("ACCESS_REFUSED - access to queue 'orders' refused", now, 0));
  EXPECT_TRUE(state.failed(kMissing, now, 0));
}

TEST(SubscriberState, ConsumingAfterAFailure_SaysItIsBackClearsTheReasonAndResetsTheBackoff) {
  auto state = billing();
  const auto now = Clock::now();
  state.failed(kMissing, now, 0);
  state.failed(kMissing, now, 0);

  EXPECT_TRUE(state.consuming_as("warren.billing.1.abcd"));
  EXPECT_TRUE(state.consuming());
  EXPECT_EQ(state.consumer_tag(), "warren.billing.1.abcd");
  EXPECT_EQ(state.reason(), "");
  EXPECT_FALSE(state.due(now + 1h)) << "a consuming subscription is never due";

  EXPECT_TRUE(state.failed(kMissing, now, 0)) << "after a recovery, the same failure is news";
  EXPECT_EQ(state.retry_at(), now + 100ms) << "the backoff started over";
}

TEST(SubscriberState, FirstConsume_IsNoComeback) {
  auto state = billing();
  EXPECT_FALSE(state.consuming_as("warren.billing.1.abcd"));
}

TEST(SubscriberState, CancelledByTheBroker_DueAtTheGivenTimeAndComebackReported) {
  auto state = billing();
  const auto now = Clock::now();
  state.consuming_as("tag");

  state.interrupted("the broker cancelled the consumer of worker 'billing' on queue 'orders'", now);

  EXPECT_FALSE(state.consuming());
  EXPECT_TRUE(state.due(now));
  EXPECT_TRUE(state.failed(kMissing, now, 0)) << "why it cannot consume again is news";
  EXPECT_TRUE(state.consuming_as("tag2"));
}

TEST(SubscriberState, StoppedWithTheConnection_KeepsTheReasonSoTheSameFailureIsNotNews) {
  auto state = billing();
  const auto now = Clock::now();
  state.failed(kMissing, now, 0);

  state.stopped();  // the connection went; after the reconnect the queue is still missing

  EXPECT_EQ(state.reason(), kMissing);
  EXPECT_FALSE(state.failed(kMissing, now, 0));
}

}  // namespace
}  // namespace warren::broker
