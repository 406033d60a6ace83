// How many rows each queue of the SQLite table queue holds, by status, and how long its oldest
// ready row has been waiting: what `warren queue status` prints. One statement, so the numbers
// come from one snapshot of the file even while hosts write to it; it reads the status indexes,
// not the table.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "queue/queue_census.h"
#include "queue/sqlite_connection.h"

namespace warren::queue {

// Every queue that has rows, by name, as of `now` (ms since the epoch). Throws SqliteError.
std::map<std::string, QueueCensus> take_queue_census(SqliteConnection& connection,
                                                     std::int64_t now);

}  // namespace warren::queue
