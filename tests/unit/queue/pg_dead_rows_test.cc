// The command line's views of the PostgreSQL queue on a real server: the dead rows `warren dlq`
// works on (queue/pg_dead_rows.h: what next() shows, replay in place fenced by the lease token and
// waking the hosts, remove) and the census of `warren queue status` (queue/pg_queue_census.h).
// Rows are made dead by SQL, as the transport would leave them.
#include <poll.h>

#include <gmock/gmock.h>

#include <chrono>

#include "pg_queue_fixture.h"
#include "queue/pg_dead_rows.h"
#include "queue/pg_queue_census.h"
#include "transport/transport.h"

namespace warren::queue::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class PgDeadRowsTest : public PgQueue {
 protected:
  // A dead row of `queue`, as the transport leaves one.
  void dead(const std::string& queue, const std::string& id, const std::string& error,
            const std::string& headers = "{}") {
    db().exec_params(
        "INSERT INTO warren_queue (queue, message_id, exchange, routing_key, headers, body, "
        "status, attempts, lease_token, last_error, finished_at) VALUES ($1, $2, 'orders', "
        "'order.created', $3::jsonb, '\\x00ff'::bytea, 'dead', 3, 3, $4, now())",
        {queue, id, headers, error});
  }

  std::vector<transport::DeadLetter> read_all(PgDeadRows& rows) {
    std::vector<transport::DeadLetter> letters;
    while (auto letter = rows.next())
      letters.push_back(std::move(*letter));
    return letters;
  }
};

TEST_F(PgDeadRowsTest, Fetch_OnlyTheDeadRowsOfItsQueue_OldestFirst_WithReasonAndOrigin) {
  PG_QUEUE_OR_SKIP();
  dead("work", "a", "bad order", R"({"x-batch": "1"})");
  dead("other", "b", "elsewhere");
  db().exec("INSERT INTO warren_queue (queue, message_id) VALUES ('work', 'pending')");
  for (int i = 0; i < 150; ++i)  // more than a page
    dead("work", "bulk-" + std::to_string(i), "");

  PgDeadRows rows(db(), "work");
  EXPECT_EQ(rows.census(), "151 dead row(s) in the queue");
  const auto letters = read_all(rows);
  ASSERT_EQ(letters.size(), 151u);
  const auto& first = letters.front();
  EXPECT_EQ(first.message.message_id, "a");
  EXPECT_EQ(first.error, "bad order");
  EXPECT_EQ(first.original_exchange, "orders");
  EXPECT_EQ(first.original_routing_key, "order.created");
  EXPECT_EQ(first.message.body, std::string("\x00\xff", 2));
  EXPECT_EQ(first.message.queue, "work");
  EXPECT_THAT(first.message.headers, ElementsAre(Pair("x-batch", "1")));
  EXPECT_EQ(letters.back().message.message_id, "bulk-149");
  EXPECT_EQ(letters.back().error, "(no reason recorded)");
}

TEST_F(PgDeadRowsTest, Replay_RowIsPendingAgainDueNow_HostsWoken_AndAStaleViewIsFenced) {
  PG_QUEUE_OR_SKIP();
  // Named after the schema: every schema's inserts notify the same channel of the database.
  const std::string work = schema() + ".work";
  dead(work, "a", "bad order", R"({"x-warren-error": "bad order", "keep": "me"})");
  auto listener = connect();
  listener.exec("LISTEN warren_queue");

  PgDeadRows rows(db(), work);
  auto letter = rows.next();
  ASSERT_TRUE(letter);
  transport::OutboundMessage copy;
  copy.headers = {{"keep", "me"}, {"x-warren-replay-count", "1"}};
  // Meanwhile the row was replayed, failed and died again: its token moved on.
  db().exec("UPDATE warren_queue SET lease_token = lease_token + 1 WHERE message_id = 'a'");
  EXPECT_FALSE(rows.replay(*letter, copy));
  EXPECT_EQ(count("status = 'dead'"), 1);

  PgDeadRows again(db(), work);
  letter = again.next();
  ASSERT_TRUE(letter);
  EXPECT_TRUE(again.replay(*letter, copy));
  const auto row = db().exec(
      "SELECT status, attempts, last_error IS NULL, finished_at IS NULL, crashes, headers::text, "
      "next_attempt_at <= now() FROM warren_queue WHERE message_id = 'a'");
  EXPECT_EQ(row.text(0, 0), "pending");
  EXPECT_EQ(row.text(0, 1), "0");
  EXPECT_EQ(row.text(0, 2), "t");
  EXPECT_EQ(row.text(0, 3), "t");
  EXPECT_EQ(row.text(0, 4), "0");
  EXPECT_EQ(row.text(0, 5), R"({"keep": "me", "x-warren-replay-count": "1"})");
  EXPECT_EQ(row.text(0, 6), "t");
  EXPECT_FALSE(again.replay(*letter, copy)) << "replayed twice";

  // The hosts hear of it at once rather than at their next poll.
  bool woken = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!woken && std::chrono::steady_clock::now() < deadline) {
    pollfd readable{listener.socket(), POLLIN, 0};
    ::poll(&readable, 1, 100);
    listener.consume_input();
    for (const auto& notification : listener.take_notifications_with_payloads())
      woken = woken || notification.payload == work;
  }
  EXPECT_TRUE(woken) << "no notification for " << work << " after the replay";
}

TEST_F(PgDeadRowsTest, Remove_DeletesTheGivenDeadRowsAndNoOther) {
  PG_QUEUE_OR_SKIP();
  for (int i = 0; i < 700; ++i)  // more than one statement's chunk
    dead("work", "d-" + std::to_string(i), "gone");
  dead("work", "kept", "gone");
  PgDeadRows rows(db(), "work");
  std::vector<transport::DeadLetter> chosen;
  while (auto letter = rows.next()) {
    if (letter->message.message_id != "kept")
      chosen.push_back(std::move(*letter));
  }
  // One of them was replayed meanwhile: no longer dead, not deleted.
  db().exec("UPDATE warren_queue SET status = 'pending' WHERE message_id = 'd-7'");
  EXPECT_EQ(rows.remove(chosen), 699u);
  EXPECT_EQ(count(), 2);
}

TEST_F(PgDeadRowsTest, Census_CountsEveryStatusPerQueue_OldestReadyIgnoresDelayedRows) {
  PG_QUEUE_OR_SKIP();
  EXPECT_TRUE(take_pg_queue_census(db()).queues.empty());
  db().exec(
      "INSERT INTO warren_queue (queue, status, next_attempt_at) VALUES "
      "('work', 'pending', now() - interval '30 seconds'), "
      "('work', 'pending', now() + interval '1 hour'), "
      "('work', 'running', now()), ('work', 'done', now()), ('work', 'done', now()), "
      "('emails', 'pending', now() + interval '1 hour'), ('emails', 'dead', now())");
  const auto census = take_pg_queue_census(db());
  ASSERT_EQ(census.queues.size(), 2u);
  const QueueCensus& work = census.queues.at("work");
  EXPECT_EQ(work.pending, 2);
  EXPECT_EQ(work.running, 1);
  EXPECT_EQ(work.done, 2);
  EXPECT_EQ(work.dead, 0);
  ASSERT_TRUE(work.oldest_ready_due);
  const double waited = static_cast<double>(census.server_now_ms - *work.oldest_ready_due) / 1000;
  EXPECT_GE(waited, 30.0);
  EXPECT_LT(waited, 60.0);
  const QueueCensus& emails = census.queues.at("emails");
  EXPECT_EQ(emails.pending, 1);
  EXPECT_EQ(emails.dead, 1);
  EXPECT_FALSE(emails.oldest_ready_due) << "a row waiting for its retry delay is not ready";
}

// Other tests may hold transactions in the same database meanwhile: the holder is this test's
// session, or one whose transaction is at least as old.
TEST_F(PgDeadRowsTest, XminHolder_IsTheOldestOpenTransactionOfAnotherSession) {
  PG_QUEUE_OR_SKIP();
  auto application = connect();
  application.exec("SET application_name = 'forgotten transaction'");
  const int pid = std::stoi(application.exec("SELECT pg_backend_pid()").text(0, 0));
  application.exec("BEGIN");
  application.exec("SELECT txid_current()");  // holds a transaction id: idle in transaction
  const double open_for = std::stod(
      db().exec("SELECT extract(epoch FROM clock_timestamp() - xact_start) FROM pg_stat_activity "
                "WHERE pid = " +
                std::to_string(pid))
          .text(0, 0));
  const auto holder = oldest_xmin_holder(db());
  ASSERT_TRUE(holder);
  if (holder->pid == pid) {
    EXPECT_EQ(holder->application_name, "forgotten transaction");
    EXPECT_EQ(holder->state, "idle in transaction");
  }
  EXPECT_GE(holder->transaction_seconds, open_for);
  application.exec("ROLLBACK");
  const auto after = oldest_xmin_holder(db());
  EXPECT_TRUE(!after || after->pid != pid) << "a finished transaction still reported";
}

}  // namespace
}  // namespace warren::queue::testing
