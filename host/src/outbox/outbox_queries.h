// The SQL the relay and `warren outbox` run against warren_outbox (sql/outbox.sql), in one place.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "outbox/batch_verdict.h"
#include "outbox/outbox_store.h"
#include "postgres/pg_connection.h"

namespace warren::outbox {

// $1: batch size. Columns: id, exchange, routing_key, message_id, content_type, headers, payload
// (binary results: payload raw, attempts a binary int4).
extern const char* const kClaimSql;
// $1: row ids (uuid[]).
extern const char* const kMarkSentSql;
// $1 ids, $2 attempts, $3 dead, $4 retry_in_ms, $5 errors (arrays of the same length).
extern const char* const kMarkFailedSql;

// The parameters of kMarkFailedSql for `failures`.
struct MarkFailedParams {
  std::string ids;
  std::string attempts;
  std::string dead;
  std::string retry_in_ms;
  std::string errors;
};
MarkFailedParams mark_failed_params(const std::vector<RowFailure>& failures);

// Pending and dead counts and the age of the oldest pending row.
OutboxStats query_outbox_stats(postgres::PgConnection& connection);

// Deletes up to `limit` sent rows published more than `older_than` ago; returns how many.
long prune_sent_rows(postgres::PgConnection& connection, std::chrono::milliseconds older_than,
                     int limit);

// Sets every dead row back to pending (attempts 0, due now) and wakes the relays; returns how many.
long retry_dead_rows(postgres::PgConnection& connection);

}  // namespace warren::outbox
