// SQLite, loaded when a SQLite table queue is first opened rather than linked into every warren
// process: a RabbitMQ host never calls it, yet a linked libsqlite3 costs it 0.26 MB of resident
// memory (issue 17). libsqlite3.so.0 is ABI-stable, so the functions are looked up by name once,
// with the signatures of the sqlite3.h this is compiled against.
#pragma once

#include <sqlite3.h>

#include "system_library/optional_library.h"

namespace warren::queue {

// Every SQLite function Warren calls. X(name) for each, so that the list is written once.
// clang-format off
#define WARREN_SQLITE_FUNCTIONS(X) \
  X(sqlite3_bind_blob64) \
  X(sqlite3_bind_int64) \
  X(sqlite3_bind_null) \
  X(sqlite3_bind_text64) \
  X(sqlite3_busy_handler) \
  X(sqlite3_changes) \
  X(sqlite3_clear_bindings) \
  X(sqlite3_close) \
  X(sqlite3_close_v2) \
  X(sqlite3_column_blob) \
  X(sqlite3_column_bytes) \
  X(sqlite3_column_int64) \
  X(sqlite3_column_text) \
  X(sqlite3_column_type) \
  X(sqlite3_errmsg) \
  X(sqlite3_errstr) \
  X(sqlite3_exec) \
  X(sqlite3_extended_result_codes) \
  X(sqlite3_finalize) \
  X(sqlite3_free) \
  X(sqlite3_last_insert_rowid) \
  X(sqlite3_open_v2) \
  X(sqlite3_prepare_v3) \
  X(sqlite3_reset) \
  X(sqlite3_step)
// clang-format on

struct SqliteApi {
  WARREN_SQLITE_FUNCTIONS(WARREN_OPTIONAL_POINTER)
};

// The loaded library (dlopen on the first call, from any thread; never unloaded). Throws
// std::runtime_error saying what to install when libsqlite3.so.0 or one of its functions is
// missing.
const SqliteApi& sqlite();

}  // namespace warren::queue
