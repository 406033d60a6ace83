// The one backoff: steps grow from initial to max, jitter only stretches a step (never shortens
// it, never by more than `jitter` of it), and the failure count resets after a success.
#include "transport/backoff.h"

#include <gtest/gtest.h>

namespace warren::transport {
namespace {

using std::chrono::milliseconds;
using Growth = BackoffPolicy::Growth;

BackoffPolicy exponential(milliseconds initial, milliseconds max, double jitter = 0) {
  return BackoffPolicy{Growth::exponential, initial, max, jitter};
}

TEST(BackoffPolicy, Exponential_DoublesFromInitialUpToMax) {
  const auto policy = exponential(milliseconds(100), milliseconds(1000));
  EXPECT_EQ(policy.delay_after(1, 0.0), milliseconds(100));
  EXPECT_EQ(policy.delay_after(2, 0.0), milliseconds(200));
  EXPECT_EQ(policy.delay_after(4, 0.0), milliseconds(800));
  EXPECT_EQ(policy.delay_after(5, 0.0), milliseconds(1000));
  EXPECT_EQ(policy.delay_after(4000000000U, 0.0), milliseconds(1000));
}

TEST(BackoffPolicy, ZeroFailures_CountAsTheFirst) {
  EXPECT_EQ(exponential(milliseconds(100), milliseconds(1000)).delay_after(0, 0.0),
            milliseconds(100));
}

TEST(BackoffPolicy, HugeMax_StepsNeverOverflow) {
  const auto policy = exponential(milliseconds(1), std::chrono::hours(24 * 365));
  EXPECT_EQ(policy.delay_after(999999, 0.0), std::chrono::hours(24 * 365));
}

TEST(BackoffPolicy, Jitter_StretchesByAtMostItsFractionAndNeverShortens) {
  const auto policy = exponential(milliseconds(1000), milliseconds(300000), 0.2);
  EXPECT_EQ(policy.delay_after(1, 0.0), milliseconds(1000));
  EXPECT_EQ(policy.delay_after(1, 0.5), milliseconds(1100));
  EXPECT_EQ(policy.delay_after(1, 0.999999), milliseconds(1200));
  EXPECT_EQ(policy.delay_after(3, 0.5), milliseconds(4400));
  // At the cap the step is max, and jitter still spreads the attempts beyond it.
  EXPECT_EQ(policy.delay_after(30, 0.0), milliseconds(300000));
  EXPECT_EQ(policy.delay_after(30, 0.5), milliseconds(330000));
  for (int i = 0; i < 100; ++i) {
    const double r = i / 100.0;
    const auto delay = policy.delay_after(2, r);
    EXPECT_GE(delay, milliseconds(2000)) << r;
    EXPECT_LE(delay, milliseconds(2400)) << r;
  }
}

TEST(BackoffPolicy, JitterRoundsUp_SoTheDelayIsNeverBelowTheStretchedValue) {
  const auto policy = exponential(milliseconds(3), milliseconds(3), 0.5);
  EXPECT_EQ(policy.delay_after(1, 0.5), milliseconds(4));  // 3.75 -> 4
}

TEST(BackoffPolicy, FixedAndNone) {
  const BackoffPolicy fixed{Growth::fixed, milliseconds(700), milliseconds(5000), 0};
  EXPECT_EQ(fixed.delay_after(1, 0.0), milliseconds(700));
  EXPECT_EQ(fixed.delay_after(9, 0.0), milliseconds(700));
  const BackoffPolicy none{Growth::none, milliseconds(700), milliseconds(5000), 1.0};
  EXPECT_EQ(none.delay_after(3, 0.9), milliseconds(0));
}

TEST(BackoffPolicy, MaxBelowInitial_MaxWins) {
  EXPECT_EQ(exponential(milliseconds(500), milliseconds(100)).delay_after(1, 0.0),
            milliseconds(100));
}

TEST(ReconnectPolicy, StepsFromInitialToMaxStretchedByUpToHalf) {
  const auto policy = reconnect_policy(milliseconds(500), milliseconds(10000));
  EXPECT_EQ(policy.delay_after(1, 0.0), milliseconds(500));
  EXPECT_EQ(policy.delay_after(1, 0.999999), milliseconds(750));
  EXPECT_EQ(policy.delay_after(6, 0.0), milliseconds(10000));
  EXPECT_EQ(policy.delay_after(6, 0.999999), milliseconds(15000));
}

TEST(ReconnectPolicy, ZeroInitialAndMaxBelowInitial_AreMadeUsable) {
  const auto zero = reconnect_policy(milliseconds(0), milliseconds(0));
  EXPECT_EQ(zero.delay_after(1, 0.0), milliseconds(1));
  EXPECT_EQ(zero.delay_after(10, 0.0), milliseconds(1));
  const auto inverted = reconnect_policy(milliseconds(800), milliseconds(100));
  EXPECT_EQ(inverted.delay_after(3, 0.0), milliseconds(800));
}

TEST(Backoff, CountsFailuresUntilReset) {
  Backoff backoff(exponential(milliseconds(100), milliseconds(1000)));
  EXPECT_EQ(backoff.next(0.0), milliseconds(100));
  EXPECT_EQ(backoff.next(0.0), milliseconds(200));
  EXPECT_EQ(backoff.next(0.0), milliseconds(400));
  EXPECT_EQ(backoff.failures(), 3U);
  backoff.reset();
  EXPECT_EQ(backoff.failures(), 0U);
  EXPECT_EQ(backoff.next(0.0), milliseconds(100));
}

}  // namespace
}  // namespace warren::transport
