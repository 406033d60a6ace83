// How many rows one queue of a table queue holds, by status: what `warren queue status` prints
// and the engine exports as warren_queue_depth and warren_queue_oldest_pending_seconds.
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
