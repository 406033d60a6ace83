// Specification of the retry decision: immediate retries, backoff, attempt limits, dead-letter.
#include "runtime/retry_decision.h"

#include <gtest/gtest.h>

namespace warren::runtime {
namespace {

using std::chrono::milliseconds;

HandlerResult failed(std::string reason = "std::runtime_error: boom") {
  HandlerResult result;
  result.kind = HandlerResult::Kind::failed;
  result.reason = std::move(reason);
  return result;
}

config::RetryPolicy policy(int max_attempts, int immediate) {
  config::RetryPolicy p;
  p.max_attempts = max_attempts;
  p.immediate = immediate;
  p.initial = milliseconds(1000);
  p.max = milliseconds(300000);
  p.jitter = 0.0;
  return p;
}

TEST(RetryDecision, Ack_IsAcked) {
  HandlerResult ack;
  ack.kind = HandlerResult::Kind::ack;
  const auto decision = decide(policy(5, 0), ack, 1, 0.5);
  EXPECT_FALSE(decision.run_again_now);
  EXPECT_EQ(decision.settlement.kind, transport::Settlement::Kind::ack);
}

TEST(RetryDecision, PermanentError_IsDeadLetteredAtFirstAttemptWithItsReason) {
  HandlerResult permanent;
  permanent.kind = HandlerResult::Kind::failed_permanent;
  permanent.reason = "warren::PermanentError: bad json";
  const auto decision = decide(policy(5, 2), permanent, 1, 0.5);
  EXPECT_FALSE(decision.run_again_now);
  EXPECT_EQ(decision.settlement.kind, transport::Settlement::Kind::dead_letter);
  EXPECT_EQ(decision.settlement.reason, "warren::PermanentError: bad json");
}

TEST(RetryDecision, FailureWithinImmediateRetries_RunsAgainNow) {
  EXPECT_TRUE(decide(policy(5, 2), failed(), 1, 0.5).run_again_now);
  EXPECT_TRUE(decide(policy(5, 2), failed(), 2, 0.5).run_again_now);
  EXPECT_FALSE(decide(policy(5, 2), failed(), 3, 0.5).run_again_now);
}

TEST(RetryDecision, FailureAfterImmediateRetries_IsDelayedWithExponentialBackoff) {
  const auto p = policy(6, 1);
  const auto second = decide(p, failed(), 2, 0.0);
  EXPECT_EQ(second.settlement.kind, transport::Settlement::Kind::retry_later);
  EXPECT_EQ(second.settlement.next_attempt, 3u);
  EXPECT_EQ(second.settlement.delay, milliseconds(1000));
  EXPECT_EQ(decide(p, failed(), 3, 0.0).settlement.delay, milliseconds(2000));
  EXPECT_EQ(decide(p, failed(), 4, 0.0).settlement.delay, milliseconds(4000));
}

TEST(RetryDecision, LastAttemptFailure_IsDeadLetteredNamingTheAttemptsAndTheError) {
  const auto decision = decide(policy(3, 0), failed("std::logic_error: nope"), 3, 0.5);
  EXPECT_EQ(decision.settlement.kind, transport::Settlement::Kind::dead_letter);
  EXPECT_EQ(decision.settlement.reason, "gave up after 3 attempts: std::logic_error: nope");
}

TEST(RetryDecision, ExplicitRetryDelay_OverridesThePolicyAndSkipsImmediateRetries) {
  HandlerResult retry;
  retry.kind = HandlerResult::Kind::retry;
  retry.delay = milliseconds(1234);
  const auto decision = decide(policy(5, 3), retry, 1, 0.9);
  EXPECT_FALSE(decision.run_again_now);
  EXPECT_EQ(decision.settlement.kind, transport::Settlement::Kind::retry_later);
  EXPECT_EQ(decision.settlement.delay, milliseconds(1234));
}

TEST(RetryDecision, InvalidOutcome_IsRetriedLikeAFailure) {
  HandlerResult garbage;
  garbage.kind = HandlerResult::Kind::invalid;
  garbage.reason = "the handler returned an invalid outcome (kind 99)";
  const auto decision = decide(policy(2, 0), garbage, 1, 0.0);
  EXPECT_EQ(decision.settlement.kind, transport::Settlement::Kind::retry_later);
}

TEST(Backoff, JitterOnlyStretchesAndTheCapApplies) {
  auto p = policy(10, 0);
  p.jitter = 0.2;
  EXPECT_EQ(backoff_delay(p, 1, 0.0), milliseconds(1000));
  EXPECT_EQ(backoff_delay(p, 1, 0.999999), milliseconds(1200));
  EXPECT_EQ(backoff_delay(p, 30, 0.0), milliseconds(300000));
  // 300 s x (1 + 0.2 x 0.999999) = 359,999.94 ms, rounded up to whole milliseconds.
  EXPECT_EQ(backoff_delay(p, 30, 0.999999), milliseconds(360000));
}

TEST(Backoff, FixedAndNone) {
  auto p = policy(10, 0);
  p.backoff = config::RetryPolicy::Backoff::fixed;
  EXPECT_EQ(backoff_delay(p, 7, 0.0), milliseconds(1000));
  p.backoff = config::RetryPolicy::Backoff::none;
  EXPECT_EQ(backoff_delay(p, 7, 0.5), milliseconds(0));
}

}  // namespace
}  // namespace warren::runtime
