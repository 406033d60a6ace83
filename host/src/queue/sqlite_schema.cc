// See sqlite_schema.h.
#include "queue/sqlite_schema.h"

#include <string>

#include "sqlite_schema_sql.h"

namespace warren::queue {

int sqlite_schema_version(SqliteConnection& connection) {
  Statement exists(connection,
                   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                   "'warren_schema'");
  exists.step();
  const bool has_table = exists.integer(0) > 0;
  exists.reset();
  if (!has_table)
    return 0;
  Statement version(connection, "SELECT version FROM warren_schema WHERE name = 'queue'");
  const int found = version.step() ? static_cast<int>(version.integer(0)) : 0;
  version.reset();
  return found;
}

void ensure_sqlite_schema(SqliteConnection& connection) {
  WriteTransaction transaction(connection);
  const int found = sqlite_schema_version(connection);
  if (found > kSqliteQueueSchemaVersion) {
    throw SqliteError("the queue database '" + connection.path().string() +
                          "' has schema version " + std::to_string(found) +
                          ", made by a newer Warren; this one knows version " +
                          std::to_string(kSqliteQueueSchemaVersion) +
                          ": upgrade Warren, or point [broker.sqlite] path at another file",
                      0);
  }
  connection.exec(kSqliteQueueSchemaSql);
  transaction.commit();
}

}  // namespace warren::queue
