// See sqlite_api.h.
#include "queue/sqlite_api.h"

namespace warren::queue {
namespace {

SqliteApi load() {
  const system_library::OptionalLibrary library("libsqlite3.so.0", "The SQLite table queue",
                                                "libsqlite3-0");
  const std::string too_old = "too old a SQLite (Warren needs 3.20 or later)";
  SqliteApi api;
  WARREN_SQLITE_FUNCTIONS(WARREN_OPTIONAL_LOOKUP)
  return api;
}

}  // namespace

const SqliteApi& sqlite() {
  static const SqliteApi api = load();  // thread-safe; a throw leaves it to be tried again
  return api;
}

}  // namespace warren::queue
