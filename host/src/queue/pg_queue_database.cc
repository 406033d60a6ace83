// See pg_queue_database.h.
#include "queue/pg_queue_database.h"

#include <algorithm>
#include <cmath>

#include "postgres/pg_array.h"
#include "queue/headers_json.h"
#include "queue/pg_queue_census.h"
#include "queue/pg_queue_schema.h"
#include "queue/row_settlement.h"

namespace warren::queue {
namespace {

// A PostgreSQL error as the engine sees it. Transient: the connection (class 08, or lost),
// serialization and deadlock (40), resources (53), an operator's shutdown or cancel (57), a
// server starting up; anything else is a bug or a schema that does not match.
class PgQueueError final : public QueueDatabaseError {
 public:
  PgQueueError(const std::string& what, bool transient)
      : QueueDatabaseError(what), transient_(transient) {}
  bool transient() const noexcept override { return transient_; }

 private:
  bool transient_;
};

bool is_transient(const postgres::PgError& error) {
  if (error.connection_lost())
    return true;
  const std::string& state = error.sqlstate();
  for (const char* prefix : {"08", "40", "53", "57"}) {
    if (state.rfind(prefix, 0) == 0)
      return true;
  }
  return false;
}

// The columns a claim returns, in this order (binary results): ids as int8, the due time as ms
// since the epoch (int8), max_attempts, attempts as int4, redelivered as bool.
constexpr const char* kClaimedColumns =
    "q.id, q.lease_token, (extract(epoch FROM q.next_attempt_at) * 1000)::int8, q.max_attempts, "
    "q.message_id, q.exchange, q.routing_key, q.content_type, q.headers::text, q.body, "
    "q.attempts, q.redelivered, q.queue";

constexpr const char* kRunning = "status = 'running'";

struct Statement {
  const char* name;
  std::string sql;
};

// Every statement of the queue, prepared on each new connection. $n parameters are text.
std::vector<Statement> statements() {
  const std::string running(kRunning);
  return {
      {"warren_insert",
       "INSERT INTO warren_queue (queue, message_id, exchange, routing_key, content_type, "
       "headers, body) VALUES ($1, $2, $3, $4, $5, $6::jsonb, decode($7, 'hex')) "
       "ON CONFLICT (queue, message_id) DO NOTHING"},
      {"warren_claim",
       std::string("WITH ready AS MATERIALIZED (SELECT id FROM warren_queue WHERE queue = $1 AND "
                   "status = 'pending' AND next_attempt_at <= now() ORDER BY next_attempt_at, id "
                   "LIMIT $2 FOR UPDATE SKIP LOCKED) UPDATE warren_queue q SET status = "
                   "'running', lease_owner = $3, lease_until = now() + $4 * interval '1 "
                   "millisecond', lease_token = q.lease_token + 1 FROM ready WHERE q.id = "
                   "ready.id RETURNING ") +
           kClaimedColumns},
      {"warren_ack",
       "UPDATE warren_queue q SET status = 'done', finished_at = now(), lease_owner = NULL, "
       "lease_until = NULL FROM unnest($1::int8[], $2::int8[]) AS a(id, token) WHERE q.id = a.id "
       "AND q.lease_token = a.token AND q.status = 'running' RETURNING q.id"},
      {"warren_retry",
       "UPDATE warren_queue SET status = 'pending', lease_owner = NULL, lease_until = NULL, "
       "redelivered = false, attempts = $3, next_attempt_at = now() + $4 * interval '1 "
       "millisecond', headers = $5::jsonb, last_error = coalesce($6, last_error) WHERE id = $1 "
       "AND lease_token = $2 AND " +
           running},
      {"warren_dead",
       "UPDATE warren_queue SET status = 'dead', lease_owner = NULL, lease_until = NULL, "
       "attempts = $3, headers = coalesce($4::jsonb, headers), last_error = $5, finished_at = "
       "now() WHERE id = $1 AND lease_token = $2 AND " +
           running},
      {"warren_release",
       "UPDATE warren_queue SET status = 'pending', redelivered = true, lease_owner = NULL, "
       "lease_until = NULL WHERE id = $1 AND lease_token = $2 AND " +
           running},
      {"warren_extend",
       "UPDATE warren_queue q SET lease_until = now() + $3 * interval '1 millisecond' FROM "
       "unnest($1::int8[], $2::int8[]) AS a(id, token) WHERE q.id = a.id AND q.lease_token = "
       "a.token AND q.status = 'running' RETURNING q.id"},
      // Under SKIP LOCKED, so that hosts rescuing at once do not wait for each other (nor for a
      // host settling the row right now).
      {"warren_rescue",
       "WITH expired AS MATERIALIZED (SELECT id FROM warren_queue WHERE status = 'running' AND "
       "lease_until < now() ORDER BY lease_until LIMIT 1000 FOR UPDATE SKIP LOCKED) UPDATE "
       "warren_queue q SET crashes = q.crashes + 1, redelivered = true, lease_owner = NULL, "
       "lease_until = NULL, status = CASE WHEN q.crashes + 1 >= $1 THEN 'dead' ELSE 'pending' "
       "END, finished_at = CASE WHEN q.crashes + 1 >= $1 THEN now() ELSE NULL END, last_error = "
       "CASE WHEN q.crashes + 1 >= $1 THEN 'lease expired ' || (q.crashes + 1) || ' times: the "
       "host handling it died or hung each time' ELSE q.last_error END FROM expired WHERE q.id = "
       "expired.id"},
      {"warren_prune",
       "DELETE FROM warren_queue WHERE id IN (SELECT id FROM warren_queue WHERE status = 'done' "
       "AND finished_at < now() - $1 * interval '1 millisecond' ORDER BY finished_at LIMIT $2 FOR "
       "UPDATE SKIP LOCKED)"},
      {"warren_next_due",
       "SELECT greatest(ceil(extract(epoch FROM min(next_attempt_at) - now()) * 1000), 0)::int8 "
       "FROM warren_queue WHERE queue = $1 AND status = 'pending' HAVING count(*) > 0"},
  };
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0xF]);
  }
  return out;
}

// '{1,2,3}' for unnest($1::int8[]).
std::string int_array(std::span<const RowLease> leases, std::int64_t RowLease::*field) {
  std::string out = "{";
  for (std::size_t i = 0; i < leases.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    out += std::to_string(leases[i].*field);
  }
  out.push_back('}');
  return out;
}

std::string ms(std::chrono::milliseconds duration) {
  return std::to_string(duration.count());
}

}  // namespace

PgQueueDatabase::PgQueueDatabase(PgDatabaseOptions options) : options_(std::move(options)) {
  connection();  // connects and applies the schema, or throws saying why
}

PgQueueDatabase::~PgQueueDatabase() {
  stop_watching();
}

postgres::PgConnection& PgQueueDatabase::connection() {
  if (connection_ && connection_->ok())
    return *connection_;
  connection_.reset();
  try {
    auto fresh = std::make_unique<postgres::PgConnection>(postgres::PgConnectOptions{
        options_.dsn, "warren " + options_.owner,
        std::chrono::duration_cast<std::chrono::seconds>(options_.connect_timeout)});
    ensure_pg_queue_schema(*fresh, options_.schema);
    for (const auto& statement : statements())
      fresh->prepare(statement.name, statement.sql);
    connection_ = std::move(fresh);
  } catch (const postgres::PgError& e) {
    throw PgQueueError(e.what(), is_transient(e));
  } catch (const PgQueueSchemaError& e) {
    throw PgQueueError(e.what(), false);
  }
  return *connection_;
}

postgres::PgResult PgQueueDatabase::run(const char* name,
                                        const std::vector<std::optional<std::string>>& params,
                                        bool binary_results) {
  postgres::PgConnection& open = connection();
  try {
    return open.exec_prepared(name, params, binary_results);
  } catch (const postgres::PgError& e) {
    if (e.connection_lost() || !open.ok())
      connection_.reset();
    throw PgQueueError(e.what(), is_transient(e));
  }
}

void PgQueueDatabase::begin() {
  postgres::PgConnection& open = connection();
  try {
    open.exec("BEGIN");
  } catch (const postgres::PgError& e) {
    connection_.reset();
    throw PgQueueError(e.what(), is_transient(e));
  }
}

void PgQueueDatabase::commit() {
  if (!connection_)
    throw PgQueueError("lost the connection to PostgreSQL before the commit", true);
  try {
    connection_->exec("COMMIT");
  } catch (const postgres::PgError& e) {
    // Whether a COMMIT that lost its connection took effect is unknown: the fencing tokens make
    // a settlement written twice harmless, and a claim that did commit comes back by its lease.
    connection_.reset();
    throw PgQueueError(e.what(), is_transient(e));
  }
}

void PgQueueDatabase::rollback() noexcept {
  if (connection_)
    connection_->rollback_quietly();
}

void PgQueueDatabase::insert(const std::string& queue, const transport::OutboundMessage& message,
                             const std::string& message_id) {
  run("warren_insert", {queue, message_id, message.exchange, message.routing_key,
                        message.content_type, headers_to_json(message.headers), hex(message.body)});
}

std::vector<ClaimedRow> PgQueueDatabase::claim(const std::string& queue, int limit,
                                               std::chrono::milliseconds lease) {
  std::vector<ClaimedRow> rows;
  if (limit <= 0)
    return rows;
  const postgres::PgResult result =
      run("warren_claim", {queue, std::to_string(limit), options_.owner, ms(lease)}, true);
  rows.reserve(static_cast<std::size_t>(result.rows()));
  for (int r = 0; r < result.rows(); ++r) {
    ClaimedRow row;
    row.lease = {result.binary_int64(r, 0), result.binary_int64(r, 1)};
    row.next_attempt_at = result.binary_int64(r, 2);
    if (!result.is_null(r, 3))
      row.max_attempts = result.binary_int32(r, 3);
    transport::InboundMessage& message = row.message;
    message.message_id = result.text(r, 4);
    message.exchange = result.text(r, 5);
    message.routing_key = result.text(r, 6);
    message.content_type = result.text(r, 7);
    std::string why;
    if (auto headers = headers_from_json(result.text(r, 8), why)) {
      message.headers = std::move(*headers);
    } else {
      row.malformed = why;
    }
    message.body = result.text(r, 9);
    message.attempt = static_cast<std::uint32_t>(std::max(result.binary_int32(r, 10), 0) + 1);
    message.redelivered = result.value(r, 11) == std::string_view("\1", 1);
    message.queue = result.text(r, 12);
    rows.push_back(std::move(row));
  }
  // RETURNING gives no order: deliver oldest due first, as claimed.
  std::sort(rows.begin(), rows.end(), [](const ClaimedRow& a, const ClaimedRow& b) {
    return std::tie(a.next_attempt_at, a.lease.id) < std::tie(b.next_attempt_at, b.lease.id);
  });
  return rows;
}

bool PgQueueDatabase::settle(const ClaimedRow& row, const transport::Settlement& settlement) {
  const RowLease& lease = row.lease;
  const RowSettlement write = row_settlement_for(row, settlement);
  switch (write.status) {
    case RowSettlement::Status::done:
      return ack_all(std::span<const RowLease>(&lease, 1)).front();
    case RowSettlement::Status::pending:
      return release(lease);
    case RowSettlement::Status::retry:
      return run("warren_retry",
                 {std::to_string(lease.id), std::to_string(lease.token),
                  std::to_string(write.attempts), ms(write.delay), write.headers_json, write.error})
                 .affected_rows() > 0;
    case RowSettlement::Status::dead:
      return run("warren_dead",
                 {std::to_string(lease.id), std::to_string(lease.token),
                  std::to_string(write.attempts), write.headers_json, write.error.value_or("")})
                 .affected_rows() > 0;
  }
  return false;
}

std::vector<bool> PgQueueDatabase::applied_by_id(const postgres::PgResult& result,
                                                 std::span<const RowLease> leases) const {
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(result.rows()));
  for (int r = 0; r < result.rows(); ++r)
    ids.push_back(std::stoll(result.text(r, 0)));
  std::sort(ids.begin(), ids.end());
  std::vector<bool> applied;
  applied.reserve(leases.size());
  for (const RowLease& lease : leases)
    applied.push_back(std::binary_search(ids.begin(), ids.end(), lease.id));
  return applied;
}

std::vector<bool> PgQueueDatabase::ack_all(std::span<const RowLease> leases) {
  if (leases.empty())
    return {};
  const postgres::PgResult result =
      run("warren_ack", {int_array(leases, &RowLease::id), int_array(leases, &RowLease::token)});
  return applied_by_id(result, leases);
}

bool PgQueueDatabase::bury(const RowLease& lease, const std::string& reason) {
  return run("warren_dead",
             {std::to_string(lease.id), std::to_string(lease.token), "0", std::nullopt, reason})
             .affected_rows() > 0;
}

bool PgQueueDatabase::release(const RowLease& lease) {
  return run("warren_release", {std::to_string(lease.id), std::to_string(lease.token)})
             .affected_rows() > 0;
}

std::vector<bool> PgQueueDatabase::extend_all(std::span<const RowLease> leases,
                                              std::chrono::milliseconds lease) {
  if (leases.empty())
    return {};
  const postgres::PgResult result =
      run("warren_extend",
          {int_array(leases, &RowLease::id), int_array(leases, &RowLease::token), ms(lease)});
  return applied_by_id(result, leases);
}

int PgQueueDatabase::rescue() {
  return static_cast<int>(
      run("warren_rescue", {std::to_string(kMaxLeaseExpiries)}).affected_rows());
}

int PgQueueDatabase::prune_done(std::chrono::milliseconds retention, int limit) {
  return static_cast<int>(
      run("warren_prune", {ms(retention), std::to_string(limit)}).affected_rows());
}

std::optional<std::chrono::milliseconds> PgQueueDatabase::next_due_in(const std::string& queue) {
  const postgres::PgResult result = run("warren_next_due", {queue});
  if (result.rows() == 0 || result.is_null(0, 0))
    return std::nullopt;
  return std::chrono::milliseconds(std::stoll(result.text(0, 0)));
}

std::map<std::string, QueueCensus> PgQueueDatabase::census() {
  postgres::PgConnection& open = connection();
  try {
    PgQueueCensus taken = take_pg_queue_census(open);
    // Ages are measured on the server's clock; the engine measures on this host's.
    const std::int64_t skew = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count() -
                              taken.server_now_ms;
    for (auto& [name, counts] : taken.queues) {
      if (counts.oldest_ready_due)
        *counts.oldest_ready_due += skew;
    }
    return std::move(taken.queues);
  } catch (const postgres::PgError& e) {
    if (e.connection_lost() || !open.ok())
      connection_.reset();
    throw PgQueueError(e.what(), is_transient(e));
  }
}

std::optional<double> PgQueueDatabase::oldest_transaction_seconds() {
  postgres::PgConnection& open = connection();
  try {
    const auto holder = oldest_xmin_holder(open);
    return holder ? holder->transaction_seconds : 0.0;
  } catch (const postgres::PgError& e) {
    if (e.connection_lost() || !open.ok())
      connection_.reset();
    throw PgQueueError(e.what(), is_transient(e));
  }
}

void PgQueueDatabase::watch(std::function<void()> wake) {
  listener_ = std::make_unique<PgQueueListener>(
      PgQueueListener::Options{options_.dsn, "warren " + options_.owner + " listener",
                               options_.connect_timeout},
      std::move(wake));
}

void PgQueueDatabase::stop_watching() {
  listener_.reset();
}

}  // namespace warren::queue
