// The SQLite queue database a config names ([broker.sqlite]), opened for the command line's
// tools: `warren dlq` and `warren queue` look at a queue that `warren topology apply` or
// `warren run` created, and never create one themselves.
#pragma once

#include <memory>

#include "config/config.h"
#include "queue/sqlite_connection.h"

namespace warren::cli {

// Throws queue::SqliteError naming the file and what to do (missing, no Warren schema, newer).
std::unique_ptr<queue::SqliteConnection> open_queue_database(const config::Config& config);

}  // namespace warren::cli
