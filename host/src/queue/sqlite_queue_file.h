// Opens an existing queue database for the command line's tools (`warren dlq`, `warren queue`):
// unlike the transport, which creates the file and its schema, a tool that looks at the queue
// must not leave an empty database behind a mistyped path, so a missing file, a file with no
// Warren schema and one with a newer schema are each refused with what to do.
#pragma once

#include <memory>

#include "queue/sqlite_connection.h"

namespace warren::queue {

// `options.create` is ignored (never created). Throws SqliteError naming the file and the fix.
std::unique_ptr<SqliteConnection> open_queue_file(SqliteOpenOptions options);

}  // namespace warren::queue
