// See outbox_queries.h.
#include "outbox/outbox_queries.h"

#include <cstdlib>

#include "postgres/pg_array.h"

namespace warren::outbox {

// ORDER BY created_at with the partial index warren_outbox_pending_idx; FOR UPDATE SKIP LOCKED
// under READ COMMITTED: a row another relay holds is skipped, and a row another relay marked sent
// after our snapshot is re-checked against the WHERE clause and left out.
const char* const kClaimSql =
    "SELECT id::text, exchange, routing_key, message_id, content_type, headers::text, payload, "
    "attempts "
    "FROM warren_outbox "
    "WHERE status = 'pending' AND next_attempt_at <= clock_timestamp() "
    "ORDER BY created_at "
    "LIMIT $1 "
    "FOR UPDATE SKIP LOCKED";

const char* const kMarkSentSql =
    "UPDATE warren_outbox SET status = 'sent', published_at = clock_timestamp() "
    "WHERE id = ANY($1::uuid[])";

const char* const kMarkFailedSql =
    "UPDATE warren_outbox AS o "
    "SET attempts = f.attempts, "
    "    status = CASE WHEN f.dead THEN 'dead' ELSE 'pending' END, "
    "    last_error = f.error, "
    "    next_attempt_at = clock_timestamp() + f.retry_in_ms * interval '1 millisecond' "
    "FROM unnest($1::uuid[], $2::int[], $3::bool[], $4::bigint[], $5::text[]) "
    "     AS f(id, attempts, dead, retry_in_ms, error) "
    "WHERE o.id = f.id";

MarkFailedParams mark_failed_params(const std::vector<RowFailure>& failures) {
  std::vector<std::string> ids, attempts, dead, retry_in_ms, errors;
  for (const RowFailure& failure : failures) {
    ids.push_back(failure.id);
    attempts.push_back(std::to_string(failure.attempts));
    dead.push_back(failure.dead ? "true" : "false");
    retry_in_ms.push_back(std::to_string(failure.retry_in.count()));
    errors.push_back(failure.error);
  }
  return {postgres::pg_array_literal(ids), postgres::pg_array_literal(attempts),
          postgres::pg_array_literal(dead), postgres::pg_array_literal(retry_in_ms),
          postgres::pg_array_literal(errors)};
}

OutboxStats query_outbox_stats(postgres::PgConnection& connection) {
  const postgres::PgResult result = connection.exec(
      "SELECT (SELECT count(*) FROM warren_outbox WHERE status = 'pending'), "
      "       (SELECT count(*) FROM warren_outbox WHERE status = 'dead'), "
      "       (SELECT extract(epoch FROM clock_timestamp() - min(created_at)) "
      "        FROM warren_outbox WHERE status = 'pending')");
  OutboxStats stats;
  stats.pending = std::strtol(result.text(0, 0).c_str(), nullptr, 10);
  stats.dead = std::strtol(result.text(0, 1).c_str(), nullptr, 10);
  if (!result.is_null(0, 2))
    stats.oldest_pending_age_seconds = std::strtod(result.text(0, 2).c_str(), nullptr);
  return stats;
}

long prune_sent_rows(postgres::PgConnection& connection, std::chrono::milliseconds older_than,
                     int limit) {
  // SKIP LOCKED: relays of several hosts pruning at once take different rows, none waits.
  const postgres::PgResult result = connection.exec_params(
      "DELETE FROM warren_outbox WHERE id = ANY(ARRAY("
      "  SELECT id FROM warren_outbox WHERE status = 'sent' "
      "  AND published_at < clock_timestamp() - $1::bigint * interval '1 millisecond' "
      "  LIMIT $2::int FOR UPDATE SKIP LOCKED))",
      {std::to_string(older_than.count()), std::to_string(limit)});
  return result.affected_rows();
}

long retry_dead_rows(postgres::PgConnection& connection) {
  const postgres::PgResult result = connection.exec(
      "WITH revived AS ("
      "  UPDATE warren_outbox SET status = 'pending', attempts = 0, "
      "         next_attempt_at = clock_timestamp() "
      "  WHERE status = 'dead' RETURNING 1) "
      "SELECT count(*), pg_notify('warren_outbox', '') FROM revived");
  return std::strtol(result.text(0, 0).c_str(), nullptr, 10);
}

}  // namespace warren::outbox
