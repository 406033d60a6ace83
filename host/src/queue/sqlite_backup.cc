// See sqlite_backup.h.
#include "queue/sqlite_backup.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace warren::queue {
namespace {

// Flushes `path` (a file or a directory) to disk: VACUUM INTO leaves that to the caller.
void flush_to_disk(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int error = errno;
    if (fd >= 0)
      ::close(fd);
    throw SqliteError(
        "flushing the backup '" + path.string() + "' to disk: " + std::strerror(error), 0);
  }
  ::close(fd);
}

}  // namespace

BackupReport backup_queue_file(SqliteConnection& connection, const std::filesystem::path& to) {
  std::error_code error;
  if (std::filesystem::symlink_status(to, error).type() != std::filesystem::file_type::not_found) {
    throw BackupTargetExists("'" + to.string() +
                             "' already exists: a backup never overwrites a file; give a new "
                             "path, or move the old one away first");
  }
  const std::filesystem::path directory =
      to.has_parent_path() ? to.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(directory, error)) {
    throw SqliteError("cannot write the backup '" + to.string() + "': the directory '" +
                          directory.string() + "' does not exist",
                      0);
  }
  try {
    Statement vacuum(connection, "VACUUM INTO ?1");
    vacuum.bind(1, std::string_view(to.string()));
    vacuum.run();
    flush_to_disk(to);
    flush_to_disk(directory);
  } catch (const SqliteError&) {
    std::filesystem::remove(to, error);  // a partial copy is worse than none
    throw;
  }
  BackupReport report;
  report.bytes = std::filesystem::file_size(to);
  SqliteOpenOptions read_back;
  read_back.path = to;
  read_back.read_only = true;
  SqliteConnection copy(read_back);
  Statement rows(copy, "SELECT count(*) FROM warren_queue");
  rows.step();
  report.rows = rows.integer(0);
  rows.reset();
  return report;
}

}  // namespace warren::queue
