// See pg_queue_census.h.
#include "queue/pg_queue_census.h"

#include <cstdlib>

namespace warren::queue {
namespace {

std::int64_t as_int64(std::string_view text) {
  return std::strtoll(std::string(text).c_str(), nullptr, 10);
}

}  // namespace

PgQueueCensus take_pg_queue_census(postgres::PgConnection& connection) {
  // The ready part reports the earliest next_attempt_at among the rows already due (a row waiting
  // for its retry delay is not waiting for a worker); every part carries the server's now() of
  // the statement, so that the age does not depend on this machine's clock.
  const auto rows = connection.exec(
      "WITH census AS ("
      " SELECT queue, 0 AS part, count(*) AS n,"
      "  (extract(epoch FROM min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()))"
      "   * 1000)::bigint AS due"
      "  FROM warren_queue WHERE status = 'pending' GROUP BY queue"
      " UNION ALL SELECT queue, 1, count(*), NULL FROM warren_queue WHERE status = 'running'"
      "  GROUP BY queue"
      " UNION ALL SELECT queue, 2, count(*), NULL FROM warren_queue WHERE status = 'done'"
      "  GROUP BY queue"
      " UNION ALL SELECT queue, 3, count(*), NULL FROM warren_queue WHERE status = 'dead'"
      "  GROUP BY queue)"
      " SELECT queue, part, n, due, (extract(epoch FROM now()) * 1000)::bigint FROM census"
      " UNION ALL SELECT NULL, -1, 0, NULL, (extract(epoch FROM now()) * 1000)::bigint");
  PgQueueCensus census;
  for (int row = 0; row < rows.rows(); ++row) {
    census.server_now_ms = as_int64(rows.value(row, 4));
    const std::int64_t part = as_int64(rows.value(row, 1));
    if (part < 0)
      continue;
    QueueCensus& counts = census.queues[rows.text(row, 0)];
    const std::int64_t n = as_int64(rows.value(row, 2));
    switch (part) {
      case 0:
        counts.pending = n;
        if (!rows.is_null(row, 3))
          counts.oldest_ready_due = as_int64(rows.value(row, 3));
        break;
      case 1:
        counts.running = n;
        break;
      case 2:
        counts.done = n;
        break;
      default:
        counts.dead = n;
        break;
    }
  }
  return census;
}

std::optional<XminHolder> oldest_xmin_holder(postgres::PgConnection& connection) {
  const auto rows = connection.exec(
      "SELECT pid, coalesce(application_name, ''), coalesce(state, ''),"
      " extract(epoch FROM clock_timestamp() - xact_start)"
      " FROM pg_stat_activity"
      " WHERE datname = current_database() AND pid <> pg_backend_pid()"
      "  AND xact_start IS NOT NULL"
      "  AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)"
      " ORDER BY xact_start LIMIT 1");
  if (rows.rows() == 0)
    return std::nullopt;
  XminHolder holder;
  holder.pid = static_cast<int>(as_int64(rows.value(0, 0)));
  holder.application_name = rows.text(0, 1);
  holder.state = rows.text(0, 2);
  holder.transaction_seconds = std::strtod(rows.text(0, 3).c_str(), nullptr);
  return holder;
}

}  // namespace warren::queue
