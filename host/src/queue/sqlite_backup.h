// `warren queue backup`: a consistent copy of a live queue database, made with VACUUM INTO. It
// reads one snapshot (a WAL reader: hosts go on claiming and settling while it runs), writes a
// compact single file with no -wal beside it, and is flushed to disk before it is reported.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "queue/sqlite_connection.h"

namespace warren::queue {

// `to` already exists: a backup never overwrites anything.
class BackupTargetExists : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BackupReport {
  std::uintmax_t bytes = 0;  // the copy's size
  std::int64_t rows = 0;     // rows of warren_queue in the copy (read back from it)
};

// Writes the copy to `to`. Throws BackupTargetExists, or SqliteError (no such directory, disk
// full...; a partial copy is removed).
BackupReport backup_queue_file(SqliteConnection& connection, const std::filesystem::path& to);

}  // namespace warren::queue
