// PgOutboxStore against a real PostgreSQL: the claim, the record, SKIP LOCKED between relays, and
// NOTIFY waking a waiting relay.
#include "outbox/pg_outbox_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "eventually.h"
#include "outbox/outbox_queries.h"
#include "pg_test_schema.h"

namespace warren::outbox {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

class PgOutboxStoreTest : public ::testing::Test {
 protected:
  PgOutboxStore make_store() {
    PgOutboxStoreOptions options;
    options.outbox = schema_.name();  // application_name: this test's connections only
    options.dsn = schema_.dsn();
    return PgOutboxStore(options);
  }
  // Inserts `count` rows through warren_outbox_enqueue; returns their message ids in order.
  std::vector<std::string> enqueue(int count,
                                   const std::string& routing_key = "pedido.registrado") {
    auto db = schema_.connect();
    std::vector<std::string> ids;
    for (int i = 0; i < count; ++i) {
      const std::string id = "m-" + std::to_string(i) + "-" + routing_key;
      db.exec_params(
          "SELECT warren_outbox_enqueue('livraria.eventos', $1, convert_to($2, 'UTF8'), "
          "'{\"x-n\": 1}', $3)",
          {routing_key, "{\"n\": " + std::to_string(i) + "}", id});
      ids.push_back(id);
    }
    return ids;
  }
  std::string scalar(const std::string& sql) {
    auto db = schema_.connect();
    return db.exec(sql).text(0, 0);
  }

  testing::PgTestSchema schema_;
};

TEST_F(PgOutboxStoreTest, Claim_ReturnsDueRowsOldestFirstWithEveryColumn) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  const auto ids = enqueue(3);
  auto store = make_store();

  const auto rows = store.claim(10);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].message_id, ids[0]);
  EXPECT_EQ(rows[2].message_id, ids[2]);
  EXPECT_EQ(rows[0].exchange, "livraria.eventos");
  EXPECT_EQ(rows[0].routing_key, "pedido.registrado");
  EXPECT_EQ(rows[0].content_type, "application/json");
  EXPECT_EQ(rows[0].headers_json, R"({"x-n": 1})");
  EXPECT_EQ(rows[0].payload, R"({"n": 0})");
  EXPECT_EQ(rows[0].attempts, 0);
  EXPECT_EQ(rows[0].id.size(), 36u);
  store.abandon();
}

TEST_F(PgOutboxStoreTest, TwoRelays_ClaimDisjointRowsWhileTheFirstHoldsItsBatch) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(10);
  auto first = make_store();
  auto second = make_store();

  const auto first_rows = first.claim(6);
  const auto second_rows = second.claim(6);  // SKIP LOCKED: the 4 the first did not take

  ASSERT_EQ(first_rows.size(), 6u);
  ASSERT_EQ(second_rows.size(), 4u);
  for (const auto& row : second_rows) {
    for (const auto& other : first_rows)
      EXPECT_NE(row.id, other.id);
  }
  first.abandon();
  second.abandon();
}

TEST_F(PgOutboxStoreTest, Complete_MarksSentRowsAndRecordsFailuresWithBackoffAndDeath) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(3);
  auto store = make_store();
  const auto rows = store.claim(10);
  BatchVerdict verdict;
  verdict.sent = {rows[0].id};
  verdict.failed.push_back(
      {rows[1].id, rows[1].message_id, 1, false, 60s, "returned: \"NO_ROUTE\""});
  verdict.failed.push_back({rows[2].id, rows[2].message_id, 5, true, 0s, "nacked"});

  store.complete(verdict);

  auto db = schema_.connect();
  const auto sent = db.exec_params(
      "SELECT status, published_at IS NOT NULL FROM warren_outbox WHERE id = $1", {rows[0].id});
  EXPECT_EQ(sent.text(0, 0), "sent");
  EXPECT_EQ(sent.text(0, 1), "t");
  const auto retried = db.exec_params(
      "SELECT status, attempts, last_error, next_attempt_at > now() + interval '50 seconds' "
      "FROM warren_outbox WHERE id = $1",
      {rows[1].id});
  EXPECT_EQ(retried.text(0, 0), "pending");
  EXPECT_EQ(retried.text(0, 1), "1");
  EXPECT_EQ(retried.text(0, 2), "returned: \"NO_ROUTE\"");
  EXPECT_EQ(retried.text(0, 3), "t");
  const auto dead = db.exec_params(
      "SELECT status, attempts, published_at IS NULL FROM warren_outbox WHERE id = $1",
      {rows[2].id});
  EXPECT_EQ(dead.text(0, 0), "dead");
  EXPECT_EQ(dead.text(0, 1), "5");
  EXPECT_EQ(dead.text(0, 2), "t");
}

TEST_F(PgOutboxStoreTest, RowWaitingForItsRetry_IsNotClaimedBeforeItIsDue) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(1);
  auto store = make_store();
  auto rows = store.claim(10);
  ASSERT_EQ(rows.size(), 1u);
  BatchVerdict verdict;
  verdict.failed.push_back({rows[0].id, rows[0].message_id, 1, false, 300ms, "nacked"});
  const auto failed_at = std::chrono::steady_clock::now();
  store.complete(verdict);

  // Claim again and again: the row comes back, but never before its 300 ms retry time.
  eventually(
      [&] {
        rows = store.claim(10);
        if (rows.empty())
          store.abandon();
        return !rows.empty();
      },
      30s, 10ms);
  const auto claimed_after = std::chrono::steady_clock::now() - failed_at;
  ASSERT_EQ(rows.size(), 1u) << "the row never became due again";
  EXPECT_GE(claimed_after, 300ms);
  EXPECT_EQ(rows[0].attempts, 1);
  store.abandon();
}

TEST_F(PgOutboxStoreTest, AbandonedBatch_LeavesItsRowsPendingForTheNextClaim) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(2);
  auto store = make_store();
  ASSERT_EQ(store.claim(10).size(), 2u);
  store.abandon();
  auto other = make_store();
  EXPECT_EQ(other.claim(10).size(), 2u);
  other.abandon();
}

TEST_F(PgOutboxStoreTest, RelayConnectionDies_ItsLocksGoAndAnotherRelayGetsTheRows) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(2);
  auto store = make_store();
  ASSERT_EQ(store.claim(10).size(), 2u);
  auto admin = schema_.connect();
  admin.exec_params(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
      "WHERE application_name = $1 AND state LIKE 'idle in transaction%'",
      {"warren outbox relay " + schema_.name()});
  auto other = make_store();
  // The terminated backend releases its locks as it exits (a deadline, not a number of polls: a
  // busy machine may take a while to end it).
  std::vector<OutboxRow> rows;
  eventually(
      [&] {
        rows = other.claim(10);
        if (rows.size() < 2)
          other.abandon();
        return rows.size() >= 2;
      },
      30s, 20ms);
  EXPECT_EQ(rows.size(), 2u);
  other.abandon();
  BatchVerdict verdict;
  verdict.sent = {"00000000-0000-0000-0000-000000000000"};
  EXPECT_THROW(store.complete(verdict), postgres::PgError);  // the dead relay cannot mark anything
}

// A poll interval no wake-up can be mistaken for, even on a busy machine: a wait that ends
// within half of it was woken.
constexpr auto kPollInterval = 60s;

TEST_F(PgOutboxStoreTest, Notify_WakesAWaitingRelayBeforeThePollInterval) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  auto store = make_store();
  store.wait_for_work(
      0ms, -1);  // connects (and returns at once: a fresh connection may have missed rows)
  std::atomic<bool> inserting{false};
  std::chrono::steady_clock::time_point insert_began;
  std::thread inserter([this, &insert_began, &inserting] {
    std::this_thread::sleep_for(200ms);  // a head start for the wait below, not relied upon
    insert_began = std::chrono::steady_clock::now();
    inserting = true;
    enqueue(1);
  });
  // The channel is per database and the other tests' schemas share it: their inserts may wake
  // this wait early (harmless for a relay, which then finds nothing and waits again). Waits
  // again until this test's insert has begun, as a relay would.
  auto woke = std::chrono::steady_clock::now();
  do {
    store.wait_for_work(kPollInterval, -1);
    woke = std::chrono::steady_clock::now();
  } while (!inserting);
  inserter.join();
  // Woken by the row's NOTIFY, long before the poll interval. (On a busy machine the insert may
  // even come first: the NOTIFY then waits for the LISTEN.)
  EXPECT_LT(woke - insert_began, kPollInterval / 2) << "the NOTIFY did not end the wait";
}

TEST_F(PgOutboxStoreTest, WakeFd_EndsTheWait) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  auto store = make_store();
  store.wait_for_work(0ms, -1);
  const int wake = ::eventfd(1, EFD_CLOEXEC);
  const auto started = std::chrono::steady_clock::now();
  store.wait_for_work(kPollInterval, wake);
  EXPECT_LT(std::chrono::steady_clock::now() - started, kPollInterval / 2);
  ::close(wake);
}

TEST_F(PgOutboxStoreTest, Stats_CountPendingAndDeadAndAgeTheOldestPending) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(3);
  auto db = schema_.connect();
  db.exec(
      "UPDATE warren_outbox SET status = 'dead' WHERE message_id = "
      "(SELECT min(message_id) FROM warren_outbox)");
  db.exec("UPDATE warren_outbox SET created_at = now() - interval '90 seconds'");
  auto store = make_store();
  const OutboxStats stats = store.stats();
  EXPECT_EQ(stats.pending, 2);
  EXPECT_EQ(stats.dead, 1);
  ASSERT_TRUE(stats.oldest_pending_age_seconds.has_value());
  EXPECT_GE(*stats.oldest_pending_age_seconds, 89.0);
}

TEST_F(PgOutboxStoreTest, PruneSent_DeletesSentRowsPastTheRetentionOnlyAtMostLimitAtATime) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(8);
  auto db = schema_.connect();
  // 5 sent 2 hours ago, 1 sent just now, 1 dead and 1 pending from 2 hours ago.
  db.exec(
      "UPDATE warren_outbox SET status = 'sent', published_at = now() - interval '2 hours' "
      "WHERE message_id IN ('m-0-pedido.registrado', 'm-1-pedido.registrado', "
      "'m-2-pedido.registrado', 'm-3-pedido.registrado', 'm-4-pedido.registrado')");
  db.exec(
      "UPDATE warren_outbox SET status = 'sent', published_at = now() "
      "WHERE message_id = 'm-5-pedido.registrado'");
  db.exec("UPDATE warren_outbox SET status = 'dead' WHERE message_id = 'm-6-pedido.registrado'");
  db.exec("UPDATE warren_outbox SET created_at = now() - interval '2 hours'");
  auto store = make_store();

  EXPECT_EQ(store.prune_sent(1h, 3), 3);
  EXPECT_EQ(store.prune_sent(1h, 3), 2);
  EXPECT_EQ(store.prune_sent(1h, 3), 0);
  EXPECT_EQ(db.exec("SELECT string_agg(status, ',' ORDER BY status) FROM warren_outbox").text(0, 0),
            "dead,pending,sent");
}

TEST_F(PgOutboxStoreTest, RetryDead_SetsDeadRowsBackToPendingWithAttemptsReset) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  enqueue(2);
  auto db = schema_.connect();
  db.exec("UPDATE warren_outbox SET status = 'dead', attempts = 10, last_error = 'returned'");
  EXPECT_EQ(retry_dead_rows(db), 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM warren_outbox WHERE status = 'pending' AND attempts = 0 "
                   "AND next_attempt_at <= clock_timestamp()"),
            "2");
  EXPECT_EQ(retry_dead_rows(db), 0);
}

TEST_F(PgOutboxStoreTest, MissingTable_IsReportedAsUndefinedTable) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  auto db = schema_.connect();
  db.exec("DROP TABLE warren_outbox CASCADE");
  auto store = make_store();
  try {
    store.claim(10);
    FAIL() << "expected postgres::PgError";
  } catch (const postgres::PgError& error) {
    EXPECT_TRUE(error.undefined_table());
    EXPECT_THAT(error.what(), HasSubstr("warren_outbox"));
  }
}

TEST(PgOutboxStoreUnreachable, Claim_ThrowsNamingTheServerButNotThePassword) {
  PgOutboxStoreOptions options;
  options.outbox = "unit";
  options.dsn = "postgresql://someone:s3cret@127.0.0.1:1/nowhere?connect_timeout=2";
  PgOutboxStore store(options);
  try {
    store.claim(1);
    FAIL() << "expected postgres::PgError";
  } catch (const postgres::PgError& error) {
    EXPECT_TRUE(error.connection_lost());
    EXPECT_THAT(error.what(), HasSubstr("127.0.0.1"));
    EXPECT_THAT(error.what(), HasSubstr("nowhere"));
    EXPECT_THAT(error.what(), ::testing::Not(HasSubstr("s3cret")));
  }
}

}  // namespace
}  // namespace warren::outbox
