// judge_batch: what a batch's broker answers turn into in the table.
#include "outbox/batch_verdict.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace warren::outbox {
namespace {

using std::chrono::milliseconds;

OutboxRow row(std::string id, int attempts = 0) {
  OutboxRow r;
  r.id = std::move(id);
  r.message_id = "m-" + r.id;
  r.attempts = attempts;
  return r;
}

const RetrySchedule kSchedule(3, milliseconds(100), milliseconds(1000));

TEST(JudgeBatch, ConfirmedRows_AreSentWithTheirMessageIds) {
  const auto verdict = judge_batch(
      {row("a"), row("b")}, {PublishOutcome::confirmed(), PublishOutcome::confirmed()}, kSchedule);
  EXPECT_EQ(verdict.sent, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(verdict.sent_message_ids, (std::vector<std::string>{"m-a", "m-b"}));
  EXPECT_TRUE(verdict.failed.empty());
  EXPECT_TRUE(verdict.not_attempted.empty());
}

TEST(JudgeBatch, FailedRow_CountsAnAttemptAndKeepsTheReason) {
  const auto verdict =
      judge_batch({row("a", 1)}, {PublishOutcome::failed("returned: NO_ROUTE")}, kSchedule);
  ASSERT_EQ(verdict.failed.size(), 1u);
  EXPECT_EQ(verdict.failed[0].id, "a");
  EXPECT_EQ(verdict.failed[0].attempts, 2);
  EXPECT_FALSE(verdict.failed[0].dead);
  EXPECT_EQ(verdict.failed[0].retry_in, milliseconds(200));
  EXPECT_EQ(verdict.failed[0].error, "returned: NO_ROUTE");
  EXPECT_TRUE(verdict.sent.empty());
}

TEST(JudgeBatch, FailedRowAtItsLastAttempt_IsDead) {
  const auto verdict = judge_batch({row("a", 2)}, {PublishOutcome::failed("nacked")}, kSchedule);
  ASSERT_EQ(verdict.failed.size(), 1u);
  EXPECT_TRUE(verdict.failed[0].dead);
  EXPECT_EQ(verdict.failed[0].attempts, 3);
}

TEST(JudgeBatch, UnavailableBroker_LeavesTheRowUntouchedWithoutAnAttempt) {
  const auto verdict = judge_batch(
      {row("a", 2), row("b")},
      {PublishOutcome::unavailable("connection lost"), PublishOutcome::confirmed()}, kSchedule);
  EXPECT_EQ(verdict.not_attempted, (std::vector<std::string>{"a"}));
  EXPECT_EQ(verdict.sent, (std::vector<std::string>{"b"}));
  EXPECT_TRUE(verdict.failed.empty());
}

TEST(JudgeBatch, OnlyUnavailable_RecordsNothing) {
  const auto verdict =
      judge_batch({row("a")}, {PublishOutcome::unavailable("connection lost")}, kSchedule);
  EXPECT_TRUE(verdict.records_nothing());
}

TEST(JudgeBatch, MismatchedSizes_AreRefused) {
  EXPECT_THROW(judge_batch({row("a")}, {}, kSchedule), std::invalid_argument);
}

}  // namespace
}  // namespace warren::outbox
