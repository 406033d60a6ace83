// The SQLite queue's schema (sql/sqlite_queue.sql), created at start and by `warren topology
// apply`: idempotent, versioned by a row of warren_schema, and refused when the file was made by
// a newer Warren than this one.
#pragma once

#include "queue/sqlite_connection.h"

namespace warren::queue {

inline constexpr int kSqliteQueueSchemaVersion = 1;

// Creates what is missing, in one write transaction. Throws SqliteError when the file holds a
// newer schema version (code 0) or cannot be written.
void ensure_sqlite_schema(SqliteConnection& connection);

// The version the file holds (0: no Warren schema yet).
int sqlite_schema_version(SqliteConnection& connection);

}  // namespace warren::queue
