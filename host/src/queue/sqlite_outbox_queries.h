// What `warren outbox status|retry-dead` and the relay's gauges read of a SQLite warren_outbox.
#pragma once

#include <cstdint>
#include <optional>

#include "queue/sqlite_connection.h"

namespace warren::queue {

struct SqliteOutboxStats {
  std::int64_t pending = 0;
  std::int64_t dead = 0;
  std::optional<double> oldest_pending_age_seconds;  // nullopt: nothing pending
};

SqliteOutboxStats sqlite_outbox_stats(SqliteConnection& connection);

// Deletes up to `limit` sent rows whose sent_at (epoch ms) is before `sent_before`, in a write
// transaction of its own; returns how many.
int sqlite_outbox_prune_sent(SqliteConnection& connection, std::int64_t sent_before, int limit);

// Dead rows back to pending (after the config gained the missing exchange or binding); returns
// how many.
int sqlite_outbox_retry_dead(SqliteConnection& connection);

}  // namespace warren::queue
