// PgInboxStore against a real PostgreSQL: recognising processed messages per worker, and pruning.
#include "outbox/pg_inbox_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "eventually.h"
#include "pg_test_schema.h"

namespace warren::outbox {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

transport::InboundMessage message(const std::string& id) {
  transport::InboundMessage m;
  m.message_id = id;
  return m;
}

class PgInboxStoreTest : public ::testing::Test {
 protected:
  PgInboxStoreOptions options(const std::string& worker) {
    PgInboxStoreOptions result;
    result.worker = worker;
    result.dsn = schema_.dsn();
    result.retention = 1h;
    return result;
  }
  testing::PgTestSchema schema_;
};

TEST_F(PgInboxStoreTest, RememberedMessage_IsSeenByItsWorkerOnly) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  PgInboxStore emails(options("emails"));
  PgInboxStore ranking(options("ranking"));

  EXPECT_FALSE(emails.seen(message("evt-1")));
  emails.remember(message("evt-1"));

  EXPECT_TRUE(emails.seen(message("evt-1")));
  EXPECT_FALSE(emails.seen(message("evt-2")));
  EXPECT_FALSE(ranking.seen(message("evt-1")));
}

TEST_F(PgInboxStoreTest, RememberingTwice_IsHarmless) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  PgInboxStore store(options("emails"));
  store.remember(message("evt-1"));
  EXPECT_NO_THROW(store.remember(message("evt-1")));
  auto db = schema_.connect();
  EXPECT_EQ(db.exec("SELECT count(*) FROM warren_inbox").text(0, 0), "1");
}

TEST_F(PgInboxStoreTest, Prune_DeletesThisWorkersRowsOlderThanRetentionOnly) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  PgInboxStore emails(options("emails"));
  PgInboxStore ranking(options("ranking"));
  emails.remember(message("old"));
  emails.remember(message("new"));
  ranking.remember(message("old"));
  auto db = schema_.connect();
  db.exec(
      "UPDATE warren_inbox SET processed_at = now() - interval '2 hours' "
      "WHERE message_id = 'old'");

  EXPECT_EQ(emails.prune_once(), 1);

  EXPECT_FALSE(emails.seen(message("old")));
  EXPECT_TRUE(emails.seen(message("new")));
  EXPECT_TRUE(ranking.seen(message("old")));  // another worker's retention is its own business
}

TEST_F(PgInboxStoreTest, PruningThread_DeletesOldRowsInTheBackground) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  auto opts = options("emails");
  opts.prune_interval = 50ms;
  PgInboxStore store(opts);
  store.remember(message("old"));
  auto db = schema_.connect();
  db.exec("UPDATE warren_inbox SET processed_at = now() - interval '2 hours'");

  store.start_pruning();
  // A deadline, not a number of polls: a busy machine may run the pruning thread late.
  const bool pruned = eventually(
      [&] { return db.exec("SELECT count(*) FROM warren_inbox").text(0, 0) == "0"; }, 30s, 10ms);
  store.stop_pruning();
  EXPECT_TRUE(pruned);
}

TEST_F(PgInboxStoreTest, MissingTable_SaysToRunOutboxInit) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  auto db = schema_.connect();
  db.exec("DROP TABLE warren_inbox");
  PgInboxStore store(options("emails"));
  try {
    store.verify();
    FAIL() << "expected postgres::PgError";
  } catch (const postgres::PgError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("warren outbox init"));
  }
  EXPECT_THROW(store.seen(message("x")), postgres::PgError);
}

}  // namespace
}  // namespace warren::outbox
