// PgQueueDatabase's own statements on a real server, where the engine's behaviour depends on an
// answer the conformance suite does not look at: when the next row falls due, and which rows a
// claim takes (a row some host died holding only by claim_suspect).
#include <gtest/gtest.h>

#include "pg_queue_fixture.h"
#include "queue/pg_queue_database.h"

namespace warren::queue::testing {
namespace {

using namespace std::chrono_literals;

class PgQueueDatabaseTest : public PgQueue {
 protected:
  std::unique_ptr<PgQueueDatabase> open() {
    PgDatabaseOptions options;
    options.dsn = this->options().dsn;
    options.schema = schema();
    options.owner = "test-host/1";
    return std::make_unique<PgQueueDatabase>(options);
  }
};

TEST_F(PgQueueDatabaseTest, NextDueIn_NothingPending_IsNothingNotZero) {
  PG_QUEUE_OR_SKIP();
  auto database = open();
  // Zero would read as "due now" and make an idle host claim in a loop.
  EXPECT_EQ(database->next_due_in("q"), std::nullopt);
  db().exec(
      "INSERT INTO warren_queue (queue, message_id, next_attempt_at) VALUES ('q', 'later', "
      "now() + interval '1 hour')");
  const auto due = database->next_due_in("q");
  ASSERT_TRUE(due.has_value());
  EXPECT_GT(*due, 59min);
}

TEST_F(PgQueueDatabaseTest, Claim_LeavesRowsAHostDiedHolding_ForClaimSuspectOneAtATime) {
  PG_QUEUE_OR_SKIP();
  auto database = open();
  db().exec(
      "INSERT INTO warren_queue (queue, message_id, crashes) VALUES ('q', 's-1', 1), ('q', "
      "'fresh', 0), ('q', 's-2', 2)");
  database->begin();
  const auto fresh = database->claim("q", 10, 60s);
  const auto first = database->claim_suspect("q", 60s);
  const auto second = database->claim_suspect("q", 60s);
  const auto none = database->claim_suspect("q", 60s);
  database->commit();
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].message.message_id, "fresh");
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(first[0].message.message_id, second[0].message.message_id);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(count("status = 'running'"), 3);
}

}  // namespace
}  // namespace warren::queue::testing
