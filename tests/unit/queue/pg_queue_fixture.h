// A PostgreSQL queue of the test's own: a fresh schema name on the server scripts/test starts
// (WARREN_TEST_PG_DSN), created by ensure_pg_queue_schema itself (as a host's start creates it)
// and dropped afterwards, so tests running at the same time never see each other's rows. Tests
// call PG_QUEUE_OR_SKIP() first: without the server they skip, unless WARREN_REQUIRE_SERVICES=1,
// where they fail (required_services.h).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

#include "postgres/pg_connection.h"
#include "queue/pg_queue_schema.h"
#include "required_services.h"

namespace warren::queue::testing {

class PgQueue : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("WARREN_TEST_PG_DSN");
    if (base == nullptr || *base == '\0')
      return;
    dsn_ = base;
    std::random_device random;
    schema_ = "queue_unit_" + std::to_string(random()) + std::to_string(random());
    db_ = std::make_unique<postgres::PgConnection>(options());
    ensure_pg_queue_schema(*db_, schema_);
  }

  void TearDown() override {
    if (schema_.empty())
      return;
    db_.reset();
    try {
      postgres::PgConnection admin(options());
      admin.exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
    } catch (const std::exception&) {
      // The server went away: nothing to clean.
    }
  }

  bool available() const { return !schema_.empty(); }
  const std::string& schema() const { return schema_; }
  // A connection whose search_path is the schema (as ensure_pg_queue_schema leaves a host's).
  postgres::PgConnection& db() { return *db_; }
  // Another session (another host, an application): search_path not set.
  postgres::PgConnection connect() const { return postgres::PgConnection(options()); }
  postgres::PgConnectOptions options() const {
    return postgres::PgConnectOptions{dsn_, "queue unit test", std::chrono::seconds(5)};
  }

  std::int64_t count(const std::string& where = "true") {
    return std::stoll(db().exec("SELECT count(*) FROM warren_queue WHERE " + where).text(0, 0));
  }

 private:
  std::string dsn_;
  std::string schema_;
  std::unique_ptr<postgres::PgConnection> db_;
};

}  // namespace warren::queue::testing

#define PG_QUEUE_OR_SKIP()                                                 \
  if (!available())                                                        \
  WARREN_SKIP_OR_FAIL(                                                     \
      "WARREN_TEST_PG_DSN is not set (scripts/test starts PostgreSQL; or " \
      "source the env of scripts/services/postgres.sh)")
