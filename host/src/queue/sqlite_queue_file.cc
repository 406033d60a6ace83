// See sqlite_queue_file.h.
#include "queue/sqlite_queue_file.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "queue/sqlite_schema.h"

namespace warren::queue {

std::unique_ptr<SqliteConnection> open_queue_file(SqliteOpenOptions options) {
  const std::string path = options.path.string();
  std::error_code error;
  if (!std::filesystem::exists(options.path, error)) {
    throw SqliteError("the queue database '" + path +
                          "' does not exist: `warren topology apply` (or `warren run`) creates "
                          "it; check [broker.sqlite] path",
                      0);
  }
  options.create = false;
  auto connection = std::make_unique<SqliteConnection>(options);
  const int version = sqlite_schema_version(*connection);
  if (version == 0) {
    throw SqliteError("'" + path +
                          "' holds no Warren queue (no warren_schema row): check [broker.sqlite] "
                          "path, or create the queue with `warren topology apply`",
                      0);
  }
  if (version > kSqliteQueueSchemaVersion) {
    throw SqliteError("the queue database '" + path + "' has schema version " +
                          std::to_string(version) + ", made by a newer Warren; this one knows " +
                          "version " + std::to_string(kSqliteQueueSchemaVersion) +
                          ": use the newer warren",
                      0);
  }
  return connection;
}

}  // namespace warren::queue
