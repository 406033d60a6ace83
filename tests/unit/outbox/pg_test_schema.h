// A PostgreSQL schema of the test's own on the server scripts/test starts (WARREN_TEST_PG_DSN),
// with sql/outbox.sql applied in it, so tests running at the same time never see each other's
// rows. Tests call PG_TEST_SCHEMA_OR_SKIP() first: without the server they skip, unless
// WARREN_REQUIRE_SERVICES=1 (scripts/test sets it), where they fail (required_services.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "outbox/outbox_schema.h"
#include "postgres/pg_connection.h"
#include "required_services.h"

namespace warren::outbox::testing {

class PgTestSchema {
 public:
  PgTestSchema() {
    const char* base = std::getenv("WARREN_TEST_PG_DSN");
    if (base == nullptr || *base == '\0')
      return;
    std::random_device random;
    name_ = "unit_" + std::to_string(random()) + std::to_string(random());
    const std::string separator = std::string(base).find('?') == std::string::npos ? "?" : "&";
    dsn_ = std::string(base) + separator + "options=-csearch_path%3D" + name_;
    postgres::PgConnection admin(
        postgres::PgConnectOptions{base, "outbox unit test", std::chrono::seconds(5)});
    admin.exec("CREATE SCHEMA " + name_);
    postgres::PgConnection db(
        postgres::PgConnectOptions{dsn_, "outbox unit test", std::chrono::seconds(5)});
    apply_outbox_schema(db);
  }
  ~PgTestSchema() {
    if (name_.empty())
      return;
    try {
      postgres::PgConnection admin(postgres::PgConnectOptions{
          std::getenv("WARREN_TEST_PG_DSN"), "outbox unit test", std::chrono::seconds(5)});
      admin.exec("DROP SCHEMA " + name_ + " CASCADE");
    } catch (const std::exception&) {
      // The server went away: nothing to clean.
    }
  }
  PgTestSchema(const PgTestSchema&) = delete;
  PgTestSchema& operator=(const PgTestSchema&) = delete;

  bool available() const { return !name_.empty(); }
  const std::string& dsn() const { return dsn_; }
  const std::string& name() const { return name_; }
  postgres::PgConnection connect() const {
    return postgres::PgConnection(
        postgres::PgConnectOptions{dsn_, "outbox unit test", std::chrono::seconds(5)});
  }

 private:
  std::string name_;
  std::string dsn_;
};

}  // namespace warren::outbox::testing

#define PG_TEST_SCHEMA_OR_SKIP(schema)                                     \
  if (!(schema).available())                                               \
  WARREN_SKIP_OR_FAIL(                                                     \
      "WARREN_TEST_PG_DSN is not set (scripts/test starts PostgreSQL; or " \
      "source the env of scripts/services/postgres.sh)")
