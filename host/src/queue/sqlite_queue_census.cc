// See sqlite_queue_census.h.
#include "queue/sqlite_queue_census.h"

namespace warren::queue {

std::map<std::string, QueueCensus> take_queue_census(SqliteConnection& connection,
                                                     std::int64_t now) {
  // One statement (one snapshot), a part per status, each reading that status's partial index
  // (INDEXED BY: without it the planner walks UNIQUE(queue, message_id) and looks up every row of
  // the table in message-id order, a random read per row: a tenth of a second per 100,000 rows
  // of a backlog, every census, with the engine waiting). The ready index holds queue and
  // next_attempt_at itself; the others look up the few running rows, and the done rows in the
  // order they finished, which is about the order they sit in the table.
  Statement census(connection,
                   "SELECT queue, 0, count(*), min(next_attempt_at) FROM warren_queue INDEXED BY "
                   "warren_queue_ready WHERE status = 'pending' GROUP BY queue "
                   "UNION ALL SELECT queue, 1, count(*), NULL FROM warren_queue INDEXED BY "
                   "warren_queue_leases WHERE status = 'running' GROUP BY queue "
                   "UNION ALL SELECT queue, 2, count(*), NULL FROM warren_queue INDEXED BY "
                   "warren_queue_done WHERE status = 'done' GROUP BY queue "
                   "UNION ALL SELECT queue, 3, count(*), NULL FROM warren_queue INDEXED BY "
                   "warren_queue_dead WHERE status = 'dead' GROUP BY queue");
  std::map<std::string, QueueCensus> queues;
  while (census.step()) {
    QueueCensus& counts = queues[census.text(0)];
    const std::int64_t rows = census.integer(2);
    switch (census.integer(1)) {
      case 0:
        counts.pending = rows;
        // The earliest pending row: the oldest ready one, if it is due already.
        if (!census.is_null(3) && census.integer(3) <= now)
          counts.oldest_ready_due = census.integer(3);
        break;
      case 1:
        counts.running = rows;
        break;
      case 2:
        counts.done = rows;
        break;
      default:
        counts.dead = rows;
        break;
    }
  }
  return queues;
}

}  // namespace warren::queue
