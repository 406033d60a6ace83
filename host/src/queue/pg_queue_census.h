// `warren queue status` on the PostgreSQL queue: rows by status per queue, as of one statement's
// snapshot (hosts go on claiming meanwhile), each part reading its status's partial index; and
// the oldest transaction in the database that holds back the xmin horizon, the one number that
// explains a SKIP LOCKED queue slowing down (vacuum cannot remove a dead row version that such a
// transaction might still see, so every claim steps over more of them).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "postgres/pg_connection.h"
#include "queue/queue_census.h"

namespace warren::queue {

struct PgQueueCensus {
  std::map<std::string, QueueCensus> queues;  // every queue that has rows
  std::int64_t server_now_ms = 0;             // the server's clock: ages are measured on it
};

// The warren_queue of the session's search_path (use_pg_queue_schema). Throws postgres::PgError.
PgQueueCensus take_pg_queue_census(postgres::PgConnection& connection);

// A session of the current database whose transaction holds back the xmin horizon.
struct XminHolder {
  int pid = 0;
  std::string application_name;    // as the session set it ("" when it set none)
  std::string state;               // "active", "idle in transaction"...
  double transaction_seconds = 0;  // since its transaction began
};

// The session, other than this one, with the oldest transaction that holds a snapshot
// (backend_xmin) or a transaction id (backend_xid) in the current database; nullopt when there
// is none, or none this role may see (other roles' sessions show with pg_read_all_stats).
// Throws postgres::PgError.
std::optional<XminHolder> oldest_xmin_holder(postgres::PgConnection& connection);

}  // namespace warren::queue
