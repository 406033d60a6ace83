// RetrySchedule: exponential backoff from initial to max, dead after max_attempts failures.
#include "outbox/retry_schedule.h"

#include <gtest/gtest.h>

namespace warren::outbox {
namespace {

using std::chrono::milliseconds;

TEST(RetrySchedule, Delays_DoubleFromInitialUpToMax) {
  const RetrySchedule schedule(100, milliseconds(1000), milliseconds(5000));
  EXPECT_EQ(schedule.delay_after(1), milliseconds(1000));
  EXPECT_EQ(schedule.delay_after(2), milliseconds(2000));
  EXPECT_EQ(schedule.delay_after(3), milliseconds(4000));
  EXPECT_EQ(schedule.delay_after(4), milliseconds(5000));
  EXPECT_EQ(schedule.delay_after(60), milliseconds(5000));
}

TEST(RetrySchedule, HugeFailureCount_StaysAtMaxWithoutOverflow) {
  const RetrySchedule schedule(1000000, milliseconds(1), std::chrono::hours(24 * 365));
  EXPECT_EQ(schedule.delay_after(999999), std::chrono::hours(24 * 365));
}

TEST(RetrySchedule, FailureBeforeTheLastAttempt_IsRetriedAfterTheDelay) {
  const RetrySchedule schedule(3, milliseconds(200), milliseconds(60000));
  const auto first = schedule.after_failure(0);
  EXPECT_EQ(first.attempts, 1);
  EXPECT_FALSE(first.dead);
  EXPECT_EQ(first.retry_in, milliseconds(200));
  const auto second = schedule.after_failure(1);
  EXPECT_EQ(second.attempts, 2);
  EXPECT_FALSE(second.dead);
  EXPECT_EQ(second.retry_in, milliseconds(400));
}

TEST(RetrySchedule, FailureAtMaxAttempts_IsDead) {
  const RetrySchedule schedule(3, milliseconds(200), milliseconds(60000));
  const auto last = schedule.after_failure(2);
  EXPECT_EQ(last.attempts, 3);
  EXPECT_TRUE(last.dead);
}

TEST(RetrySchedule, MaxAttemptsOne_FirstFailureIsDead) {
  const RetrySchedule schedule(1, milliseconds(200), milliseconds(60000));
  EXPECT_TRUE(schedule.after_failure(0).dead);
}

TEST(RetrySchedule, MaxBelowInitial_UsesInitial) {
  const RetrySchedule schedule(5, milliseconds(500), milliseconds(100));
  EXPECT_EQ(schedule.delay_after(3), milliseconds(500));
}

}  // namespace
}  // namespace warren::outbox
