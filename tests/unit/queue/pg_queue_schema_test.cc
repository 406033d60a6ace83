// The PostgreSQL queue's schema (queue/pg_queue_schema.h) on a real server: applied again it
// changes nothing, eight hosts starting at once all get it, a newer version is refused, and the
// tools refuse a schema that has no queue rather than create one.
#include "queue/pg_queue_schema.h"

#include <gmock/gmock.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "pg_queue_fixture.h"

namespace warren::queue::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using PgQueueSchemaTest = PgQueue;

TEST(PgQueueSchemaText, CompiledInText_IsTheSqlFile) {
  const std::string file = WARREN_SOURCE_DIR "/sql/postgres_queue.sql";
  std::ifstream in(file, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << file;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty()) << file;
  EXPECT_EQ(pg_queue_schema_sql(), text) << "rebuild: the compiled-in schema is not " << file;
}

TEST_F(PgQueueSchemaTest, Ensured_LeavesTheSearchPathOnTheSchemaAtTheCurrentVersion) {
  PG_QUEUE_OR_SKIP();
  EXPECT_EQ(pg_queue_schema_version(db(), schema()), kPgQueueSchemaVersion);
  EXPECT_EQ(db().exec("SELECT current_schemas(false)::text").text(0, 0), "{" + schema() + "}");
  // Unqualified names are the schema's: what the transport's statements rely on.
  db().exec("INSERT INTO warren_queue (queue) VALUES ('work')");
  EXPECT_EQ(count(), 1);
}

TEST_F(PgQueueSchemaTest, AppliedTwice_IsIdempotentAndKeepsTheRows) {
  PG_QUEUE_OR_SKIP();
  db().exec("INSERT INTO warren_queue (queue, message_id) VALUES ('work', 'before')");
  EXPECT_NO_THROW(ensure_pg_queue_schema(db(), schema()));
  auto other = connect();
  EXPECT_NO_THROW(ensure_pg_queue_schema(other, schema()));
  EXPECT_EQ(pg_queue_schema_version(db(), schema()), kPgQueueSchemaVersion);
  EXPECT_EQ(count("message_id = 'before'"), 1);
  EXPECT_EQ(db().exec("SELECT count(*) FROM warren_schema").text(0, 0), "1");
}

TEST_F(PgQueueSchemaTest, EightHostsStartingAtOnceInANewSchema_AllSucceed) {
  PG_QUEUE_OR_SKIP();
  const std::string fresh = schema() + "_fleet";
  std::vector<std::unique_ptr<postgres::PgConnection>> hosts;
  for (int i = 0; i < 8; ++i)
    hosts.push_back(std::make_unique<postgres::PgConnection>(options()));
  std::atomic<int> ready{0};
  std::atomic<int> succeeded{0};
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < 8) {
      }
      try {
        ensure_pg_queue_schema(*hosts[i], fresh);
        hosts[i]->exec("SELECT count(*) FROM warren_queue");  // its search_path is set
        ++succeeded;
      } catch (const std::exception& error) {
        errors[i] = error.what();
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  db().exec("DROP SCHEMA IF EXISTS " + fresh + " CASCADE");
  EXPECT_EQ(succeeded.load(), 8) << errors[0] << errors[1] << errors[2] << errors[3] << errors[4]
                                 << errors[5] << errors[6] << errors[7];
}

TEST_F(PgQueueSchemaTest, NewerVersionInTheDatabase_IsRefusedSayingWhichAndWhatToDo) {
  PG_QUEUE_OR_SKIP();
  db().exec("UPDATE warren_schema SET version = 2 WHERE name = 'queue'");
  auto host = connect();
  try {
    ensure_pg_queue_schema(host, schema());
    FAIL() << "a schema of version 2 was accepted";
  } catch (const PgQueueSchemaError& error) {
    EXPECT_THAT(error.what(),
                AllOf(HasSubstr("schema version 2"), HasSubstr("upgrade Warren"),
                      HasSubstr(schema()), ::testing::Not(HasSubstr("postgresql://"))));
  }
  // Refused in the transaction: nothing changed, the connection is usable.
  EXPECT_EQ(pg_queue_schema_version(host, schema()), 2);
  EXPECT_THROW(use_pg_queue_schema(host, schema()), PgQueueSchemaError);
}

TEST_F(PgQueueSchemaTest, SchemaWithoutAQueue_ToolsRefuseItAndCreateNothing) {
  PG_QUEUE_OR_SKIP();
  const std::string empty = schema() + "_none";
  auto tool = connect();
  EXPECT_EQ(pg_queue_schema_version(tool, empty), 0);
  try {
    use_pg_queue_schema(tool, empty);
    FAIL() << "a missing queue was accepted";
  } catch (const PgQueueSchemaError& error) {
    EXPECT_THAT(error.what(), HasSubstr("warren topology apply"));
  }
  EXPECT_EQ(
      tool.exec("SELECT count(*) FROM pg_namespace WHERE nspname = '" + empty + "'").text(0, 0),
      "0");
}

TEST_F(PgQueueSchemaTest, Table_HasTheStorageParametersAndNoIndexOnPayloads) {
  PG_QUEUE_OR_SKIP();
  const std::string options = db().exec(
                                      "SELECT array_to_string(reloptions, ',') FROM pg_class "
                                      "WHERE oid = 'warren_queue'::regclass")
                                  .text(0, 0);
  EXPECT_THAT(options,
              AllOf(HasSubstr("fillfactor=70"), HasSubstr("autovacuum_vacuum_scale_factor=0.01")));
  const auto indexed = db().exec(
      "SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
      "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'warren_queue'::regclass "
      "AND a.attname IN ('body', 'headers')");
  EXPECT_EQ(indexed.text(0, 0), "0");
  // The notify trigger is a statement trigger (tgtype bit 0 set means FOR EACH ROW).
  EXPECT_EQ(db().exec("SELECT tgtype & 1 FROM pg_trigger WHERE tgname = 'warren_queue_notify' "
                      "AND tgrelid = 'warren_queue'::regclass")
                .text(0, 0),
            "0");
}

}  // namespace
}  // namespace warren::queue::testing
