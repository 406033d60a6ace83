// SqliteQueueStore::ack_all, the settlement round's batched ack: each lease is fenced by its own
// token across chunk boundaries (a stale lease in the middle of a chunk is left alone and
// reported, its neighbours are done), and what it writes is what settle() writes for an ack.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "queue_file_fixture.h"

namespace warren::queue::testing {
namespace {

class SqliteAckAll : public QueueFile {
 protected:
  // Claims every ready row of `queue` under one lease each, in id order.
  std::vector<ClaimedRow> claim_all(const std::string& queue) {
    WriteTransaction transaction(db());
    const std::int64_t now = now_ms();
    auto rows = store().claim(queue, 100000, now, now + 60000);
    transaction.commit();
    return rows;
  }
  std::vector<bool> ack(const std::vector<RowLease>& leases) {
    WriteTransaction transaction(db());
    auto applied = store().ack_all(leases, now_ms());
    transaction.commit();
    return applied;
  }
  int rows_with_status(const std::string& status) {
    Statement count(db(), "SELECT count(*) FROM warren_queue WHERE status = ?1");
    count.bind(1, std::string_view(status));
    EXPECT_TRUE(count.step());
    const auto n = static_cast<int>(count.integer(0));
    count.reset();
    return n;
  }
};

TEST_F(SqliteAckAll, SeventyLeasesOverThreeChunks_AreAllDoneAsAnAckLeavesThem) {
  for (int i = 0; i < 70; ++i)
    enqueue("orders", "m" + std::to_string(i));
  std::vector<RowLease> leases;
  for (const auto& row : claim_all("orders"))
    leases.push_back(row.lease);
  ASSERT_EQ(leases.size(), 70u);

  const auto applied = ack(leases);

  EXPECT_EQ(applied, std::vector<bool>(70, true));
  EXPECT_EQ(rows_with_status("done"), 70);
  EXPECT_EQ(column("orders", "m69", "lease_owner"), "NULL");
  EXPECT_EQ(column("orders", "m69", "lease_until"), "NULL");
  EXPECT_NE(column("orders", "m69", "finished_at"), "NULL");
}

TEST_F(SqliteAckAll, StaleLeasesInTheMiddleOfChunks_AreLeftAloneAndReported) {
  for (int i = 0; i < 40; ++i)
    enqueue("orders", "m" + std::to_string(i));
  auto rows = claim_all("orders");
  ASSERT_EQ(rows.size(), 40u);
  // Row 5 was rescued and claimed again by another host (its token moved on); row 35 (in the
  // second chunk) was rescued and is pending again.
  change(
      "UPDATE warren_queue SET lease_token = lease_token + 1, lease_owner = 'other/2' "
      "WHERE message_id = 'm5'");
  change(
      "UPDATE warren_queue SET status = 'pending', lease_owner = NULL WHERE message_id = "
      "'m35'");
  std::vector<RowLease> leases;
  for (const auto& row : rows)
    leases.push_back(row.lease);

  const auto applied = ack(leases);

  std::vector<bool> expected(40, true);
  expected[5] = false;
  expected[35] = false;
  EXPECT_EQ(applied, expected);
  EXPECT_EQ(rows_with_status("done"), 38);
  EXPECT_EQ(column("orders", "m5", "status"), "running");
  EXPECT_EQ(column("orders", "m5", "lease_owner"), "other/2");
  EXPECT_EQ(column("orders", "m35", "status"), "pending");
}

TEST_F(SqliteAckAll, NoLeases_ChangesNothing) {
  enqueue("orders", "m0");
  claim_all("orders");
  EXPECT_TRUE(ack({}).empty());
  EXPECT_EQ(rows_with_status("running"), 1);
}

}  // namespace
}  // namespace warren::queue::testing
