// `warren queue status`'s numbers (queue/sqlite_queue_census.h) on a real database file: rows by
// status per queue, and the oldest ready row, which ignores rows waiting for a retry delay.
#include "queue/sqlite_queue_census.h"

#include <gmock/gmock.h>

#include "queue_file_fixture.h"

namespace warren::queue::testing {
namespace {

using QueueCensusTest = QueueFile;

TEST_F(QueueCensusTest, EmptyDatabase_NoQueues) {
  EXPECT_TRUE(take_queue_census(db(), now_ms()).empty());
}

TEST_F(QueueCensusTest, CountsEveryStatusPerQueue) {
  for (const char* id : {"d1", "d2", "d3"})
    enqueue("work", id);
  settle_all("work", transport::Settlement::Kind::ack);
  for (const char* id : {"x1", "x2"})
    enqueue("work", id);
  kill_all("work", "bad");
  enqueue("work", "r1");
  {
    WriteTransaction transaction(db());
    ASSERT_EQ(store().claim("work", 10, now_ms(), now_ms() + 60000).size(), 1u);
    transaction.commit();
  }
  for (const char* id : {"p1", "p2", "p3", "p4"})
    enqueue("work", id);
  enqueue("emails", "e1");

  const auto census = take_queue_census(db(), now_ms());
  ASSERT_EQ(census.size(), 2u);
  const QueueCensus& work = census.at("work");
  EXPECT_EQ(work.pending, 4);
  EXPECT_EQ(work.running, 1);
  EXPECT_EQ(work.done, 3);
  EXPECT_EQ(work.dead, 2);
  const QueueCensus& emails = census.at("emails");
  EXPECT_EQ(emails.pending, 1);
  EXPECT_EQ(emails.running + emails.done + emails.dead, 0);
}

TEST_F(QueueCensusTest, OldestReady_IsTheEarliestDueOfTheReadyRows_DelayedRowsIgnored) {
  enqueue("work", "retried");
  settle_all("work", transport::Settlement::Kind::retry_later);  // due in an hour
  enqueue("work", "ready-old");
  enqueue("work", "ready-new");
  ASSERT_EQ(change("UPDATE warren_queue SET next_attempt_at = 1000 WHERE message_id = "
                   "'ready-old'"),
            1);
  ASSERT_EQ(change("UPDATE warren_queue SET next_attempt_at = 5000 WHERE message_id = "
                   "'ready-new'"),
            1);

  const auto census = take_queue_census(db(), 10000);
  const QueueCensus& work = census.at("work");
  EXPECT_EQ(work.pending, 3);
  EXPECT_EQ(work.oldest_ready_due, 1000);

  enqueue("delayed-only", "later");
  settle_all("delayed-only", transport::Settlement::Kind::retry_later);
  EXPECT_EQ(take_queue_census(db(), now_ms()).at("delayed-only").oldest_ready_due, std::nullopt);
}

}  // namespace
}  // namespace warren::queue::testing
