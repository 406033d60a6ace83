// The PostgreSQL queue's schema (sql/postgres_queue.sql, compiled in), created at start and by
// `warren topology apply`: idempotent, versioned by a row of warren_schema, refused when the
// database holds a newer version than this Warren knows, and safe when many hosts start at once
// (one transaction under an advisory lock).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "postgres/pg_connection.h"

namespace warren::queue {

inline constexpr int kPgQueueSchemaVersion = 1;

// The pg_advisory_xact_lock key that serialises schema installs in a database ("WARRENQ1").
inline constexpr std::int64_t kPgQueueSchemaLockKey = 0x5741'5252'454E'5131;

// The schema cannot be used as it is: it holds a version newer than kPgQueueSchemaVersion (a
// newer Warren made it), or (use_pg_queue_schema) no queue at all. Fatal: retrying does not help;
// the message says what to do.
class PgQueueSchemaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The text of sql/postgres_queue.sql as built.
std::string_view pg_queue_schema_sql() noexcept;

// Makes `schema` hold the queue's tables and functions, and leaves the session's search_path set
// to it (the queue's statements name their tables unqualified). In one transaction under
// pg_advisory_xact_lock(kPgQueueSchemaLockKey): creates the schema when it does not exist,
// reads the version, applies the SQL when there is none. Idempotent; concurrent callers wait for
// each other and all succeed. Throws PgQueueSchemaError (a newer version), or postgres::PgError
// (nothing is left half made: the transaction is rolled back).
void ensure_pg_queue_schema(postgres::PgConnection& connection, const std::string& schema);

// The version `schema` holds: 0 when it has no Warren queue (or does not exist). Reads the
// catalogue by name; the search_path does not matter. Throws postgres::PgError.
int pg_queue_schema_version(postgres::PgConnection& connection, const std::string& schema);

// For the tools that look at a queue and never create one (`warren queue status`, `warren dlq`):
// checks that `schema` holds this version and sets the session's search_path to it. Throws
// PgQueueSchemaError (none yet: run `warren topology apply`; or a newer one), postgres::PgError.
void use_pg_queue_schema(postgres::PgConnection& connection, const std::string& schema);

}  // namespace warren::queue
