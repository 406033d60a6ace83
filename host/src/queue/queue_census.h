// How many rows a queue of a table queue (SQLite, PostgreSQL) holds, by status, and since when its
// oldest ready row has waited: one row of `warren queue status`.
#pragma once

#include <cstdint>
#include <optional>

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

}  // namespace warren::queue
