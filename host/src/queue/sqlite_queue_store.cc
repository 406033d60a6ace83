// See sqlite_queue_store.h.
#include "queue/sqlite_queue_store.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <tuple>

#include "queue/headers_json.h"
#include "queue/row_settlement.h"

namespace warren::queue {
namespace {

constexpr const char* kRunning = "status = 'running'";

// The columns a claim returns, in this order.
constexpr const char* kClaimedColumns =
    "id, lease_token, next_attempt_at, max_attempts, message_id, exchange, routing_key, "
    "content_type, headers, body, attempts, redelivered, queue";

// The part of lease_owner ("host/pid") before the last '/', and the pid after it.
std::optional<std::pair<std::string, long>> parse_owner(const std::string& owner) {
  const std::size_t slash = owner.rfind('/');
  if (slash == std::string::npos)
    return std::nullopt;
  long pid = 0;
  const char* first = owner.data() + slash + 1;
  const char* last = owner.data() + owner.size();
  const auto [end, error] = std::from_chars(first, last, pid);
  if (error != std::errc() || end != last || pid <= 0)
    return std::nullopt;
  return std::make_pair(owner.substr(0, slash), pid);
}

}  // namespace

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SqliteQueueStore::SqliteQueueStore(SqliteConnection& connection, std::string owner)
    : connection_(connection),
      owner_(std::move(owner)),
      insert_(connection,
              "INSERT INTO warren_queue (queue, message_id, exchange, routing_key, content_type, "
              "headers, body, next_attempt_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
              "?8)"),
      claim_(
          connection,
          std::string("UPDATE warren_queue SET status = 'running', lease_owner = ?1, "
                      "lease_until = ?2, lease_token = lease_token + 1 WHERE id IN (SELECT id "
                      "FROM warren_queue WHERE queue = ?3 AND status = 'pending' AND crashes = 0 "
                      "AND next_attempt_at <= ?4 ORDER BY next_attempt_at, id LIMIT ?5) "
                      "RETURNING ") +
              kClaimedColumns),
      claim_suspect_(
          connection,
          std::string("UPDATE warren_queue SET status = 'running', lease_owner = ?1, "
                      "lease_until = ?2, lease_token = lease_token + 1 WHERE id IN (SELECT id "
                      "FROM warren_queue WHERE queue = ?3 AND status = 'pending' AND crashes > 0 "
                      "AND next_attempt_at <= ?4 ORDER BY next_attempt_at, id LIMIT ?5) "
                      "RETURNING ") +
              kClaimedColumns),
      done_(connection,
            std::string("UPDATE warren_queue SET status = 'done', finished_at = ?3, lease_owner = "
                        "NULL, lease_until = NULL WHERE id = ?1 AND lease_token = ?2 AND ") +
                kRunning),
      pending_again_(connection,
                     std::string("UPDATE warren_queue SET status = 'pending', lease_owner = NULL, "
                                 "lease_until = NULL, redelivered = 1 WHERE id = ?1 AND "
                                 "lease_token = ?2 AND ") +
                         kRunning),
      retry_(
          connection,
          std::string("UPDATE warren_queue SET status = 'pending', lease_owner = NULL, "
                      "lease_until = NULL, redelivered = 0, attempts = ?3, next_attempt_at = ?4, "
                      "headers = ?5, last_error = ?6 WHERE id = ?1 AND lease_token = ?2 AND ") +
              kRunning),
      dead_(
          connection,
          std::string("UPDATE warren_queue SET status = 'dead', lease_owner = NULL, lease_until = "
                      "NULL, attempts = ?3, headers = coalesce(?4, headers), last_error = ?5, "
                      "finished_at = ?6 WHERE id = ?1 AND lease_token = ?2 AND ") +
              kRunning),
      extend_(connection,
              std::string("UPDATE warren_queue SET lease_until = ?3 WHERE id = ?1 AND lease_token "
                          "= ?2 AND ") +
                  kRunning),
      // One statement for both kinds of rescue: ?1 the cut-off for expired leases, ?2 an owner
      // that is gone (or NULL), ?3 the expiries that make a row dead, ?4 now.
      expired_(connection,
               std::string("UPDATE warren_queue SET crashes = crashes + 1, redelivered = 1, "
                           "lease_owner = NULL, lease_until = NULL, "
                           "status = CASE WHEN crashes + 1 >= ?3 THEN 'dead' ELSE 'pending' END, "
                           "finished_at = CASE WHEN crashes + 1 >= ?3 THEN ?4 ELSE NULL END, "
                           "last_error = CASE WHEN crashes + 1 >= ?3 THEN 'lease expired ' || "
                           "(crashes + 1) || ' times: the host handling it died or hung each time' "
                           "ELSE last_error END WHERE ") +
                   kRunning + " AND (lease_until < ?1 OR lease_owner = ?2)"),
      owners_(connection, std::string("SELECT DISTINCT lease_owner FROM warren_queue WHERE ") +
                              kRunning + " AND lease_owner IS NOT NULL AND lease_owner <> ?1"),
      prune_(connection,
             "DELETE FROM warren_queue WHERE id IN (SELECT id FROM warren_queue WHERE status = "
             "'done' AND finished_at < ?1 LIMIT ?2)"),
      next_due_(connection,
                "SELECT min(next_attempt_at) FROM warren_queue WHERE queue = ?1 AND status = "
                "'pending'") {}

void SqliteQueueStore::insert(const std::string& queue, const transport::OutboundMessage& message,
                              const std::string& message_id, std::int64_t now) {
  insert_.bind(1, std::string_view(queue))
      .bind(2, std::string_view(message_id))
      .bind(3, std::string_view(message.exchange))
      .bind(4, std::string_view(message.routing_key))
      .bind(5, std::string_view(message.content_type))
      .bind(6, std::string_view(headers_to_json(message.headers)))
      .bind_blob(7, message.body)
      .bind(8, now);
  insert_.run();
}

std::vector<ClaimedRow> SqliteQueueStore::claim(const std::string& queue, int limit,
                                                std::int64_t now, std::int64_t lease_until,
                                                bool suspects) {
  Statement& statement = suspects ? claim_suspect_ : claim_;
  std::vector<ClaimedRow> rows;
  if (limit <= 0)
    return rows;
  rows.reserve(static_cast<std::size_t>(limit));
  statement.bind(1, std::string_view(owner_))
      .bind(2, lease_until)
      .bind(3, std::string_view(queue))
      .bind(4, now)
      .bind(5, static_cast<std::int64_t>(limit));
  while (statement.step()) {
    ClaimedRow row;
    row.lease = {statement.integer(0), statement.integer(1)};
    row.next_attempt_at = statement.integer(2);
    if (!statement.is_null(3))
      row.max_attempts = statement.integer(3);
    transport::InboundMessage& message = row.message;
    message.message_id = statement.text(4);
    message.exchange = statement.text(5);
    message.routing_key = statement.text(6);
    message.content_type = statement.text(7);
    std::string why;
    if (auto headers = headers_from_json(statement.text(8), why)) {
      message.headers = std::move(*headers);
    } else {
      row.malformed = why;
    }
    message.body = statement.blob(9);
    message.attempt =
        static_cast<std::uint32_t>(std::max<std::int64_t>(statement.integer(10), 0) + 1);
    message.redelivered = statement.integer(11) != 0;
    message.queue = statement.text(12);
    rows.push_back(std::move(row));
  }
  // RETURNING gives no order: deliver oldest due first, as claimed. In practice the rows come in
  // the ready index's order already, and checking costs far less than sorting (moving) them.
  const auto due_order = [](const ClaimedRow& a, const ClaimedRow& b) {
    return std::tie(a.next_attempt_at, a.lease.id) < std::tie(b.next_attempt_at, b.lease.id);
  };
  if (!std::is_sorted(rows.begin(), rows.end(), due_order))
    std::sort(rows.begin(), rows.end(), due_order);
  return rows;
}

bool SqliteQueueStore::settle(const ClaimedRow& row, const transport::Settlement& settlement,
                              std::int64_t now) {
  const RowLease& lease = row.lease;
  const RowSettlement write = row_settlement_for(row, settlement);
  switch (write.status) {
    case RowSettlement::Status::done:
      return done_.bind(1, lease.id).bind(2, lease.token).bind(3, now).run() > 0;
    case RowSettlement::Status::pending:
      return release(lease);
    case RowSettlement::Status::retry:
      retry_.bind(1, lease.id)
          .bind(2, lease.token)
          .bind(3, write.attempts)
          .bind(4, now + write.delay.count())
          .bind(5, std::string_view(write.headers_json));
      if (write.error) {
        retry_.bind(6, std::string_view(*write.error));
      } else {
        retry_.bind_null(6);
      }
      return retry_.run() > 0;
    case RowSettlement::Status::dead:
      return dead_.bind(1, lease.id)
                 .bind(2, lease.token)
                 .bind(3, write.attempts)
                 .bind(4, std::string_view(write.headers_json))
                 .bind(5, std::string_view(write.error.value_or("")))
                 .bind(6, now)
                 .run() > 0;
  }
  return false;
}

namespace {

// Leases acked per statement by ack_all: each row's token is found by a CASE over the chunk, so
// a statement costs rows x chunk comparisons; 32 measured best at batch 32 and 256 (bench/queue
// bare loop with chunks of 8 to 64).
constexpr std::size_t kAckChunk = 32;

// "... WHERE id IN (?2, ?4, ...) AND lease_token = CASE id WHEN ?2 THEN ?3 ... END": the rowid
// lookups of `id IN` with each row's own fence; RETURNING names the rows that were still ours.
std::string ack_sql(std::size_t rows) {
  std::string ids;
  std::string tokens;
  for (std::size_t i = 0; i < rows; ++i) {
    // Appended, not "?" + std::to_string(...): GCC 12 at -O3 warns falsely (-Wrestrict) there.
    const std::string id = std::string("?").append(std::to_string(2 + 2 * i));
    const std::string token = std::string("?").append(std::to_string(3 + 2 * i));
    ids.append(i == 0 ? "" : ", ").append(id);
    tokens.append(" WHEN ").append(id).append(" THEN ").append(token);
  }
  std::string sql =
      "UPDATE warren_queue SET status = 'done', finished_at = ?1, lease_owner = NULL, "
      "lease_until = NULL WHERE id IN (";
  sql.append(ids).append(") AND lease_token = CASE id").append(tokens).append(" END AND ");
  sql.append(kRunning).append(" RETURNING id");
  return sql;
}

}  // namespace

Statement& SqliteQueueStore::ack_statement(std::size_t rows) {
  if (ack_statements_.size() < rows)
    ack_statements_.resize(rows);
  auto& statement = ack_statements_[rows - 1];
  if (!statement)
    statement = std::make_unique<Statement>(connection_, ack_sql(rows));
  return *statement;
}

std::vector<bool> SqliteQueueStore::ack_all(std::span<const RowLease> leases, std::int64_t now) {
  std::vector<bool> applied(leases.size(), false);
  for (std::size_t start = 0; start < leases.size(); start += kAckChunk) {
    const auto chunk = leases.subspan(start, std::min(kAckChunk, leases.size() - start));
    Statement& ack = ack_statement(chunk.size());
    ack.bind(1, now);
    for (std::size_t i = 0; i < chunk.size(); ++i)
      ack.bind(static_cast<int>(2 + 2 * i), chunk[i].id)
          .bind(static_cast<int>(3 + 2 * i), chunk[i].token);
    std::vector<std::int64_t> done;
    while (ack.step())
      done.push_back(ack.integer(0));
    for (std::size_t i = 0; i < chunk.size(); ++i)
      applied[start + i] = std::find(done.begin(), done.end(), chunk[i].id) != done.end();
  }
  return applied;
}

bool SqliteQueueStore::bury(const RowLease& lease, const std::string& reason, std::int64_t now) {
  return dead_.bind(1, lease.id)
             .bind(2, lease.token)
             .bind(3, std::int64_t{0})
             .bind_null(4)
             .bind(5, std::string_view(reason))
             .bind(6, now)
             .run() > 0;
}

bool SqliteQueueStore::release(const RowLease& lease) {
  return pending_again_.bind(1, lease.id).bind(2, lease.token).run() > 0;
}

bool SqliteQueueStore::extend(const RowLease& lease, std::int64_t lease_until) {
  return extend_.bind(1, lease.id).bind(2, lease.token).bind(3, lease_until).run() > 0;
}

int SqliteQueueStore::rescue(std::int64_t now) {
  int moved = expired_.bind(1, now)
                  .bind_null(2)
                  .bind(3, std::int64_t{kMaxLeaseExpiries})
                  .bind(4, now)
                  .run();
  std::vector<std::string> gone;
  owners_.bind(1, std::string_view(owner_));
  while (owners_.step()) {
    std::string owner = owners_.text(0);
    if (owner_is_gone(owner))
      gone.push_back(std::move(owner));
  }
  for (const auto& owner : gone) {
    // The cut-off 0 matches no expired lease: only this owner's rows move.
    moved += expired_.bind(1, std::int64_t{0})
                 .bind(2, std::string_view(owner))
                 .bind(3, std::int64_t{kMaxLeaseExpiries})
                 .bind(4, now)
                 .run();
  }
  return moved;
}

bool SqliteQueueStore::owner_is_gone(const std::string& owner) const {
  const auto ours = parse_owner(owner_);
  const auto theirs = parse_owner(owner);
  // Only a process on this machine can be checked; another machine's lease waits to expire.
  if (!ours || !theirs || ours->first != theirs->first)
    return false;
  return ::kill(static_cast<pid_t>(theirs->second), 0) != 0 && errno == ESRCH;
}

int SqliteQueueStore::prune_done(std::int64_t before, int limit) {
  return prune_.bind(1, before).bind(2, static_cast<std::int64_t>(limit)).run();
}

std::optional<std::int64_t> SqliteQueueStore::next_due(const std::string& queue) {
  next_due_.bind(1, std::string_view(queue));
  std::optional<std::int64_t> due;
  if (next_due_.step() && !next_due_.is_null(0))
    due = next_due_.integer(0);
  next_due_.reset();
  return due;
}

}  // namespace warren::queue
