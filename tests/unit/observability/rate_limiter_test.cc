// Specification of the token bucket that keeps error floods out of the logs: a burst passes, then
// a steady rate; what is refused is counted and reported with the next admitted event.
#include "observability/rate_limiter.h"

#include <gtest/gtest.h>

namespace warren::observability {
namespace {

using namespace std::chrono_literals;

const RateLimiter::Clock::time_point kStart{1h};

TEST(RateLimiter, BurstPassesThenRefuses) {
  RateLimiter limiter(/*per_second=*/5, /*burst=*/3);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(limiter.admit("orders", kStart).allowed) << "event " << i;
  EXPECT_FALSE(limiter.admit("orders", kStart).allowed);
}

TEST(RateLimiter, TokensRefillAtTheConfiguredRate) {
  RateLimiter limiter(5, 3);
  for (int i = 0; i < 3; ++i)
    limiter.admit("orders", kStart);

  EXPECT_FALSE(limiter.admit("orders", kStart + 100ms).allowed) << "half a token";
  EXPECT_TRUE(limiter.admit("orders", kStart + 200ms).allowed) << "one token after 1/5 s";
  EXPECT_FALSE(limiter.admit("orders", kStart + 200ms).allowed);
}

TEST(RateLimiter, RefusedEventsAreReportedWithTheNextAdmittedOne) {
  RateLimiter limiter(5, 1);
  ASSERT_TRUE(limiter.admit("orders", kStart).allowed);
  for (int i = 0; i < 7; ++i)
    ASSERT_FALSE(limiter.admit("orders", kStart).allowed);

  const auto next = limiter.admit("orders", kStart + 1s);
  const auto after = limiter.admit("orders", kStart + 2s);

  EXPECT_TRUE(next.allowed);
  EXPECT_EQ(next.suppressed_before, 7u);
  EXPECT_EQ(after.suppressed_before, 0u) << "the count restarts once reported";
}

TEST(RateLimiter, QuietPeriod_RefillsNoMoreThanTheBurst) {
  RateLimiter limiter(5, 3);
  limiter.admit("orders", kStart);

  const auto later = kStart + 1h;
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(limiter.admit("orders", later).allowed) << "event " << i;
  EXPECT_FALSE(limiter.admit("orders", later).allowed);
}

TEST(RateLimiter, KeysHaveSeparateBuckets) {
  RateLimiter limiter(5, 1);
  ASSERT_TRUE(limiter.admit("orders", kStart).allowed);
  ASSERT_FALSE(limiter.admit("orders", kStart).allowed);

  EXPECT_TRUE(limiter.admit("emails", kStart).allowed) << "a flood in one worker mutes no other";
}

TEST(RateLimiter, ClockGoingBackwards_AddsNoTokens) {
  RateLimiter limiter(5, 1);
  ASSERT_TRUE(limiter.admit("orders", kStart).allowed);
  EXPECT_FALSE(limiter.admit("orders", kStart - 10s).allowed);
}

// For the timer report of a flood that stopped (issue 19 item 14): each refused event is
// reported once, either taken here or with the next admitted event.
TEST(RateLimiter, TakeSuppressed_ReturnsAndResetsTheCountsOfKeysWithRefusals) {
  RateLimiter limiter(5, 1);
  ASSERT_TRUE(limiter.admit("orders", kStart).allowed);
  for (int i = 0; i < 4; ++i)
    ASSERT_FALSE(limiter.admit("orders", kStart).allowed);
  ASSERT_TRUE(limiter.admit("emails", kStart).allowed);

  const auto taken = limiter.take_suppressed();

  ASSERT_EQ(taken.size(), 1u) << "emails refused nothing";
  EXPECT_EQ(taken[0].first, "orders");
  EXPECT_EQ(taken[0].second, 4u);
  EXPECT_TRUE(limiter.take_suppressed().empty());
  EXPECT_EQ(limiter.admit("orders", kStart + 1s).suppressed_before, 0u) << "reported already";
}

}  // namespace
}  // namespace warren::observability
