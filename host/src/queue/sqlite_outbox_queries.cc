// See sqlite_outbox_queries.h.
#include "queue/sqlite_outbox_queries.h"

#include <algorithm>

#include "queue/sqlite_queue_store.h"

namespace warren::queue {

SqliteOutboxStats sqlite_outbox_stats(SqliteConnection& connection) {
  Statement stats(connection,
                  "SELECT coalesce(sum(status = 'pending'), 0), coalesce(sum(status = 'dead'), 0), "
                  "min(CASE WHEN status = 'pending' THEN created_at END) FROM warren_outbox");
  SqliteOutboxStats result;
  if (stats.step()) {
    result.pending = stats.integer(0);
    result.dead = stats.integer(1);
    if (!stats.is_null(2))
      result.oldest_pending_age_seconds =
          std::max<double>(0.0, static_cast<double>(now_ms() - stats.integer(2)) / 1000.0);
    stats.reset();
  }
  return result;
}

int sqlite_outbox_prune_sent(SqliteConnection& connection, std::int64_t sent_before, int limit) {
  WriteTransaction transaction(connection);
  Statement prune(connection,
                  "DELETE FROM warren_outbox WHERE id IN (SELECT id FROM warren_outbox "
                  "WHERE status = 'sent' AND sent_at < ?1 ORDER BY id LIMIT ?2)");
  prune.bind(1, sent_before).bind(2, static_cast<std::int64_t>(limit));
  const int deleted = prune.run();
  transaction.commit();
  return deleted;
}

int sqlite_outbox_retry_dead(SqliteConnection& connection) {
  WriteTransaction transaction(connection);
  Statement revive(connection,
                   "UPDATE warren_outbox SET status = 'pending', last_error = NULL WHERE status = "
                   "'dead'");
  const int revived = revive.run();
  transaction.commit();
  return revived;
}

}  // namespace warren::queue
