// See pg_queue_schema.h. pg_queue_schema_sql.h is generated from sql/postgres_queue.sql by CMake.
#include "queue/pg_queue_schema.h"

#include "pg_queue_schema_sql.h"
#include "postgres/pg_identifier.h"
#include "postgres/pg_transaction.h"

namespace warren::queue {

std::string_view pg_queue_schema_sql() noexcept {
  return kPgQueueSchemaSql;
}

int pg_queue_schema_version(postgres::PgConnection& connection, const std::string& schema) {
  const auto table = connection.exec_params(
      "SELECT to_regclass(format('%I.warren_schema', $1::text)) IS NOT NULL", {schema});
  if (table.value(0, 0) != "t")
    return 0;
  const auto version = connection.exec("SELECT version FROM " + postgres::quote_identifier(schema) +
                                       ".warren_schema WHERE name = 'queue'");
  return version.rows() == 0 ? 0 : std::stoi(version.text(0, 0));
}

namespace {

std::string where(const postgres::PgConnection& connection, const std::string& schema) {
  return "the PostgreSQL queue in schema '" + schema + "' of " + connection.describe();
}

[[noreturn]] void refuse_newer(const postgres::PgConnection& connection, const std::string& schema,
                               int found) {
  throw PgQueueSchemaError(
      where(connection, schema) + " has schema version " + std::to_string(found) +
      ", made by a newer Warren; this one knows version " + std::to_string(kPgQueueSchemaVersion) +
      ": upgrade Warren, or point [broker.postgres] schema at another schema");
}

}  // namespace

void ensure_pg_queue_schema(postgres::PgConnection& connection, const std::string& schema) {
  const std::string quoted = postgres::quote_identifier(schema);
  postgres::PgTransaction transaction(connection);
  connection.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kPgQueueSchemaLockKey) + ")");
  // Under the lock, and only when missing: CREATE SCHEMA IF NOT EXISTS races with itself (a
  // unique violation on pg_namespace), and needs CREATE on the database even when the schema
  // exists, which a queue's role need not have.
  const auto exists =
      connection.exec_params("SELECT 1 FROM pg_namespace WHERE nspname = $1", {schema});
  if (exists.rows() == 0)
    connection.exec("CREATE SCHEMA " + quoted);
  // Not SET LOCAL: the session keeps it after the commit (a rollback undoes it).
  connection.exec("SET search_path TO " + quoted);
  const int found = pg_queue_schema_version(connection, schema);
  if (found > kPgQueueSchemaVersion)
    refuse_newer(connection, schema, found);
  if (found < kPgQueueSchemaVersion) {
    // "relation already exists, skipping" and the like are expected on a partial schema.
    connection.exec("SET LOCAL client_min_messages = warning");
    connection.exec(std::string(pg_queue_schema_sql()));
  }
  transaction.commit();
}

void use_pg_queue_schema(postgres::PgConnection& connection, const std::string& schema) {
  const int found = pg_queue_schema_version(connection, schema);
  if (found > kPgQueueSchemaVersion)
    refuse_newer(connection, schema, found);
  if (found == 0) {
    throw PgQueueSchemaError(where(connection, schema) +
                             " does not exist yet: create it with `warren topology apply` (or "
                             "start `warren run`), or check [broker.postgres] dsn and schema");
  }
  connection.exec("SET search_path TO " + postgres::quote_identifier(schema));
}

}  // namespace warren::queue
