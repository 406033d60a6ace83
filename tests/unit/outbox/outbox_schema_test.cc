// sql/outbox.sql: applies twice, and the table and function behave as applications expect.
#include "outbox/outbox_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "pg_test_schema.h"

namespace warren::outbox {
namespace {

using ::testing::HasSubstr;

TEST(OutboxSchema, CompiledInText_IsTheSqlFile) {
  const std::string file = WARREN_SOURCE_DIR "/sql/outbox.sql";
  std::ifstream in(file, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << file;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty()) << file;
  EXPECT_EQ(outbox_schema_sql(), text) << "rebuild: the compiled-in schema is not " << file;
}

TEST(OutboxSchema, AppliedAgain_SucceedsAndKeepsTheRowsOfBothTables) {
  testing::PgTestSchema schema;  // applied once already
  PG_TEST_SCHEMA_OR_SKIP(schema);
  auto db = schema.connect();
  db.exec("SELECT warren_outbox_enqueue('e', 'k', '\\x00', message_id => 'before')");
  db.exec("INSERT INTO warren_inbox (worker, message_id) VALUES ('w', 'seen-before')");

  EXPECT_NO_THROW(apply_outbox_schema(db));
  EXPECT_NO_THROW(apply_outbox_schema(db));

  // An upgrade runs it on a live database: nothing dropped, and the function still works.
  db.exec("SELECT warren_outbox_enqueue('e', 'k', '\\x00', message_id => 'after')");
  EXPECT_EQ(db.exec("SELECT string_agg(message_id, ',' ORDER BY message_id) FROM warren_outbox")
                .text(0, 0),
            "after,before");
  EXPECT_EQ(db.exec("SELECT message_id FROM warren_inbox").text(0, 0), "seen-before");
}

TEST(OutboxSchema, Enqueue_WithDefaults_InsertsAPendingRowWithAFreshMessageId) {
  testing::PgTestSchema schema;
  PG_TEST_SCHEMA_OR_SKIP(schema);
  auto db = schema.connect();
  db.exec("SELECT warren_outbox_enqueue('livraria.eventos', 'pedido.registrado', '\\x7b7d')");
  const auto row = db.exec(
      "SELECT status, attempts, headers::text, content_type, length(message_id), "
      "convert_from(payload, 'UTF8') FROM warren_outbox");
  ASSERT_EQ(row.rows(), 1);
  EXPECT_EQ(row.text(0, 0), "pending");
  EXPECT_EQ(row.text(0, 1), "0");
  EXPECT_EQ(row.text(0, 2), "{}");
  EXPECT_EQ(row.text(0, 3), "application/json");
  EXPECT_EQ(row.text(0, 4), "36");
  EXPECT_EQ(row.text(0, 5), "{}");
}

TEST(OutboxSchema, Enqueue_ByParameterName_KeepsTheGivenMessageId) {
  testing::PgTestSchema schema;
  PG_TEST_SCHEMA_OR_SKIP(schema);
  auto db = schema.connect();
  db.exec(
      "SELECT warren_outbox_enqueue(exchange => 'e', routing_key => 'k', payload => '\\x00', "
      "message_id => 'evt-1', headers => '{\"a\": \"b\"}')");
  const auto row = db.exec("SELECT message_id, headers::text FROM warren_outbox");
  ASSERT_EQ(row.rows(), 1);
  EXPECT_EQ(row.text(0, 0), "evt-1");
  EXPECT_EQ(row.text(0, 1), R"({"a": "b"})");
}

// Whether `sql` fails as a CHECK constraint violation (SQLSTATE 23514) of `constraint`, and no
// other way: a test that accepted any postgres::PgError would pass on a typo in its own statement.
::testing::AssertionResult violates_check(postgres::PgConnection& db, const std::string& sql,
                                          const std::string& constraint) {
  try {
    db.exec(sql);
  } catch (const postgres::PgError& error) {
    const std::string message = error.what();
    if (error.sqlstate() == "23514" && message.find(constraint) != std::string::npos)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "SQLSTATE " << error.sqlstate() << ": " << message;
  }
  return ::testing::AssertionFailure() << "accepted: " << sql;
}

TEST(OutboxSchema, StatusOutsidePendingSentDeadOrHeadersNotAnObject_AreRejectedByTheirChecks) {
  testing::PgTestSchema schema;
  PG_TEST_SCHEMA_OR_SKIP(schema);
  auto db = schema.connect();

  EXPECT_TRUE(violates_check(db,
                             "INSERT INTO warren_outbox (routing_key, payload, status) "
                             "VALUES ('k', '\\x00', 'lost')",
                             "warren_outbox_status"));
  EXPECT_TRUE(violates_check(db,
                             "INSERT INTO warren_outbox (routing_key, payload, headers) "
                             "VALUES ('k', '\\x00', '[1]')",
                             "warren_outbox_headers_object"));
  EXPECT_EQ(db.exec("SELECT count(*) FROM warren_outbox").text(0, 0), "0");
}

TEST(OutboxSchema, PurgeSent_DeletesOnlyOldSentRows) {
  testing::PgTestSchema schema;
  PG_TEST_SCHEMA_OR_SKIP(schema);
  auto db = schema.connect();
  db.exec(
      "INSERT INTO warren_outbox (routing_key, payload, status, published_at) VALUES "
      "('k', '\\x00', 'sent', now() - interval '10 days'), "
      "('k', '\\x00', 'sent', now()), ('k', '\\x00', 'pending', NULL)");
  EXPECT_EQ(db.exec("SELECT warren_outbox_purge_sent('7 days')").text(0, 0), "1");
  EXPECT_EQ(db.exec("SELECT count(*) FROM warren_outbox").text(0, 0), "2");
}

}  // namespace
}  // namespace warren::outbox
