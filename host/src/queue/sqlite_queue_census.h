// How many rows each queue of the SQLite table queue holds, by status, and how long its oldest
// ready row has been waiting: what `warren queue status` prints. One statement, so the numbers
// come from one snapshot of the file even while hosts write to it; it reads the status indexes,
// not the table.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "queue/sqlite_connection.h"

namespace warren::queue {

struct QueueCensus {
  std::int64_t pending = 0;  // ready, or waiting for a retry delay
  std::int64_t running = 0;
  std::int64_t done = 0;  // not pruned yet (kept for the retention)
  std::int64_t dead = 0;
  // The earliest next_attempt_at (ms since the epoch) of the pending rows already due: since then
  // the oldest ready row has waited for a worker. Empty when no pending row is due.
  std::optional<std::int64_t> oldest_ready_due;
};

// Every queue that has rows, by name, as of `now` (ms since the epoch). Throws SqliteError.
std::map<std::string, QueueCensus> take_queue_census(SqliteConnection& connection,
                                                     std::int64_t now);

}  // namespace warren::queue
