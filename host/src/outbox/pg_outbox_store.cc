// See pg_outbox_store.h.
#include "outbox/pg_outbox_store.h"

#include <poll.h>

#include <cerrno>

#include "observability/log.h"
#include "outbox/outbox_queries.h"
#include "outbox/poll_timeout.h"
#include "postgres/pg_array.h"

namespace warren::outbox {

PgOutboxStore::PgOutboxStore(PgOutboxStoreOptions options) : options_(std::move(options)) {}

PgOutboxStore::~PgOutboxStore() {
  abandon();
}

postgres::PgConnection& PgOutboxStore::connection() {
  if (connection_ && connection_->ok())
    return *connection_;
  connection_.reset();
  postgres::PgConnectOptions connect;
  connect.dsn = options_.dsn;
  connect.application_name = "warren outbox relay " + options_.outbox;
  auto fresh = std::make_unique<postgres::PgConnection>(connect);
  // enable_bitmapscan off: before the table has statistics (new, or after a burst that autovacuum
  // has not analysed yet) the planner estimates a handful of pending rows and picks a bitmap scan
  // that reads and sorts EVERY pending row for each claim (measured: 11-18 ms per claim at 20,000
  // pending, a quarter of the throughput). The ordered scan of warren_outbox_pending_idx stops
  // after `batch` rows whatever the statistics say. This session runs only the relay's queries.
  fresh->exec("SET idle_in_transaction_session_timeout = " +
              std::to_string(options_.idle_in_transaction_timeout.count()) +
              "; SET statement_timeout = " + std::to_string(options_.statement_timeout.count()) +
              "; SET enable_bitmapscan = off; LISTEN warren_outbox");
  observability::log_info("outbox '" + options_.outbox + "': connected to PostgreSQL (" +
                          fresh->describe() + "), listening on warren_outbox");
  connection_ = std::move(fresh);
  notified_ = true;  // rows may have been committed while we were not listening
  return *connection_;
}

template <typename F>
auto PgOutboxStore::guarded(F&& body) {
  try {
    return body();
  } catch (const postgres::PgError& error) {
    if (connection_ && (error.connection_lost() || !connection_->ok()))
      connection_.reset();
    throw;
  }
}

std::vector<OutboxRow> PgOutboxStore::claim(int limit) {
  return guarded([&] {
    postgres::PgConnection& db = connection();
    db.exec("BEGIN ISOLATION LEVEL READ COMMITTED");
    const postgres::PgResult result = db.exec_params(kClaimSql, {std::to_string(limit)}, true);
    std::vector<OutboxRow> rows;
    rows.reserve(static_cast<std::size_t>(result.rows()));
    for (int i = 0; i < result.rows(); ++i) {
      OutboxRow row;
      row.id = result.text(i, 0);
      row.exchange = result.text(i, 1);
      row.routing_key = result.text(i, 2);
      row.message_id = result.text(i, 3);
      row.content_type = result.text(i, 4);
      row.headers_json = result.text(i, 5);
      // jsonb::text in binary format is the text itself.
      row.payload = result.text(i, 6);
      row.attempts = result.binary_int32(i, 7);
      rows.push_back(std::move(row));
    }
    return rows;
  });
}

void PgOutboxStore::complete(const BatchVerdict& verdict) {
  guarded([&] {
    postgres::PgConnection& db = connection();
    if (!db.in_transaction())
      throw postgres::PgError(
          "outbox '" + options_.outbox +
              "': the batch's transaction is gone (the server ended the session?)",
          "", true);
    if (!verdict.sent.empty())
      db.exec_params(kMarkSentSql, {postgres::pg_array_literal(verdict.sent)});
    if (!verdict.failed.empty()) {
      const MarkFailedParams params = mark_failed_params(verdict.failed);
      db.exec_params(kMarkFailedSql,
                     {params.ids, params.attempts, params.dead, params.retry_in_ms, params.errors});
    }
    // A COMMIT of a transaction the server already aborted answers ROLLBACK, not an error.
    if (db.exec("COMMIT").command_status() != "COMMIT")
      throw postgres::PgError("outbox '" + options_.outbox +
                                  "': PostgreSQL rolled the batch back instead of committing it",
                              "", false);
    return 0;
  });
}

void PgOutboxStore::abandon() noexcept {
  if (!connection_)
    return;
  connection_->rollback_quietly();
  if (!connection_->ok())
    connection_.reset();
}

void PgOutboxStore::wait_for_work(std::chrono::milliseconds timeout, int wake_fd) {
  guarded([&] {
    postgres::PgConnection& db = connection();
    db.consume_input();
    if (!db.take_notifications().empty())
      notified_ = true;
    if (notified_) {
      notified_ = false;
      return 0;
    }
    pollfd fds[2] = {{db.socket(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int count = wake_fd >= 0 ? 2 : 1;
    const int ready = ::poll(fds, count, poll_timeout_ms(timeout));
    if (ready > 0 && (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) != 0) {
      db.consume_input();
      db.take_notifications();  // one wake-up is enough, however many arrived
    }
    return 0;
  });
}

OutboxStats PgOutboxStore::stats() {
  return guarded([&] { return query_outbox_stats(connection()); });
}

long PgOutboxStore::prune_sent(std::chrono::milliseconds older_than, int limit) {
  return guarded([&] { return prune_sent_rows(connection(), older_than, limit); });
}

}  // namespace warren::outbox
