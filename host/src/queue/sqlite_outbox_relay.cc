// See sqlite_outbox_relay.h.
#include "queue/sqlite_outbox_relay.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "observability/log.h"
#include "queue/headers_json.h"
#include "queue/sqlite_outbox_queries.h"
#include "queue/sqlite_queue_store.h"
#include "transport/ids.h"

namespace warren::queue {
namespace {

using namespace std::chrono_literals;

constexpr auto kStatsInterval = 5s;
constexpr auto kRetryAfterError = 1s;

std::chrono::milliseconds prune_interval(const SqliteOutboxOptions& options) {
  if (options.prune_interval.count() > 0)
    return options.prune_interval;
  return std::clamp<std::chrono::milliseconds>(options.sent_retention / 2, 1s,
                                               std::chrono::hours(1));
}

struct OutboxRow {
  std::int64_t id = 0;
  transport::OutboundMessage message;
  std::string headers_error;
};

}  // namespace

SqliteOutboxRelay::SqliteOutboxRelay(SqliteOutboxOptions options, transport::RoutingTable routing,
                                     observability::Metrics* metrics, observability::Health* health)
    : options_(std::move(options)), routing_(std::move(routing)), metrics_(metrics) {
  SqliteOpenOptions open;
  open.path = options_.path;
  open.synchronous_full = options_.synchronous_full;
  open.busy_timeout = options_.busy_timeout;
  connection_ = std::make_unique<SqliteConnection>(open);
  if (health != nullptr)
    heartbeat_ = health->register_loop("sqlite outbox " + options_.outbox, 60s);
}

SqliteOutboxRelay::~SqliteOutboxRelay() {
  stop();
}

void SqliteOutboxRelay::start() {
  thread_ = std::thread([this] { run(); });
}

void SqliteOutboxRelay::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
  if (heartbeat_)
    heartbeat_->retire();
}

OutboxRoundResult SqliteOutboxRelay::relay_once() {
  OutboxRoundResult result;
  WriteTransaction transaction(*connection_);
  std::vector<OutboxRow> rows;
  {
    Statement pending(*connection_,
                      "SELECT id, exchange, routing_key, message_id, content_type, headers, body "
                      "FROM warren_outbox WHERE status = 'pending' ORDER BY id LIMIT ?1");
    pending.bind(1, static_cast<std::int64_t>(options_.batch));
    while (pending.step()) {
      OutboxRow row;
      row.id = pending.integer(0);
      row.message.exchange = pending.text(1);
      row.message.routing_key = pending.text(2);
      row.message.message_id = pending.is_null(3) ? std::string() : pending.text(3);
      row.message.content_type = pending.text(4);
      if (auto headers = headers_from_json(pending.text(5), row.headers_error))
        row.message.headers = std::move(*headers);
      row.message.body = pending.blob(6);
      if (row.message.exchange.empty())
        row.message.exchange = options_.default_exchange;
      rows.push_back(std::move(row));
    }
  }
  if (rows.empty())
    return result;

  SqliteQueueStore store(*connection_, "outbox " + options_.outbox);
  Statement sent(*connection_,
                 "UPDATE warren_outbox SET status = 'sent', sent_at = ?2, message_id = ?3 WHERE id "
                 "= ?1");
  Statement dead(*connection_,
                 "UPDATE warren_outbox SET status = 'dead', last_error = ?2 WHERE id = ?1");
  const std::int64_t now = now_ms();
  for (auto& row : rows) {
    std::string why = row.headers_error.empty() ? "" : "malformed row: " + row.headers_error;
    std::optional<std::vector<std::string>> queues;
    if (why.empty()) {
      queues = routing_.route(row.message.exchange, row.message.routing_key, row.message.headers);
      if (!queues) {
        why = row.message.exchange.empty()
                  ? "the row names no exchange and [[outbox]] " + options_.outbox + " has none"
                  : "no exchange '" + row.message.exchange + "' in the configuration";
      } else if (queues->empty()) {
        why = transport::unroutable_reason(row.message.exchange, row.message.routing_key);
      }
    }
    if (!why.empty()) {
      dead.bind(1, row.id).bind(2, std::string_view(why)).run();
      ++result.dead;
      observability::log_warn("outbox '" + options_.outbox + "': row " + std::to_string(row.id) +
                              " is dead: " + why);
      continue;
    }
    const std::string message_id =
        row.message.message_id.empty() ? transport::random_uuid() : row.message.message_id;
    for (const auto& queue : *queues)
      store.insert(queue, row.message, message_id, now);
    sent.bind(1, row.id).bind(2, now).bind(3, std::string_view(message_id)).run();
    ++result.sent;
  }
  transaction.commit();
  if (metrics_ != nullptr && result.sent > 0)
    metrics_->outbox_relayed(options_.outbox).Increment(result.sent);
  return result;
}

void SqliteOutboxRelay::refresh_stats() {
  if (metrics_ == nullptr)
    return;
  const SqliteOutboxStats stats = sqlite_outbox_stats(*connection_);
  metrics_->outbox_pending(options_.outbox).Set(static_cast<double>(stats.pending));
  metrics_->outbox_dead(options_.outbox).Set(static_cast<double>(stats.dead));
  metrics_->outbox_lag_seconds(options_.outbox).Set(stats.oldest_pending_age_seconds.value_or(0));
}

void SqliteOutboxRelay::prune_sent() {
  const std::int64_t sent_before = now_ms() - options_.sent_retention.count();
  long total = 0;
  for (;;) {
    const int deleted = sqlite_outbox_prune_sent(*connection_, sent_before, options_.prune_chunk);
    total += deleted;
    if (heartbeat_)
      heartbeat_->tick();
    if (deleted < options_.prune_chunk)
      break;
    std::lock_guard lock(mutex_);
    if (stopping_)
      break;
  }
  if (total > 0) {
    observability::log_debug("outbox '" + options_.outbox + "': deleted " + std::to_string(total) +
                             " sent row(s) past the retention");
  }
}

void SqliteOutboxRelay::run() {
  observability::log_info("outbox '" + options_.outbox + "': routing warren_outbox rows of " +
                          options_.path.string() + " into the queue");
  std::int64_t version = -1;
  auto next_stats = std::chrono::steady_clock::now();
  auto next_prune = std::chrono::steady_clock::now();
  bool failing = false;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    if (heartbeat_)
      heartbeat_->tick();
    auto wait = options_.poll_interval;
    try {
      // Only when another connection committed (the application's insert): a round per poll
      // would take the write lock for nothing.
      // Read before the round: a commit that lands during it changes the version again.
      const std::int64_t now_version = connection_->data_version();
      if (now_version != version) {
        const OutboxRoundResult result = relay_once();
        if (result.sent + result.dead < options_.batch)
          version = now_version;  // drained what there was
        else
          wait = 0ms;  // a full batch: more may wait
      }
      if (std::chrono::steady_clock::now() >= next_stats) {
        refresh_stats();
        next_stats = std::chrono::steady_clock::now() + kStatsInterval;
      }
      if (std::chrono::steady_clock::now() >= next_prune) {
        prune_sent();
        next_prune = std::chrono::steady_clock::now() + prune_interval(options_);
      }
      if (failing)
        observability::log_info("outbox '" + options_.outbox + "': the database works again");
      failing = false;
    } catch (const SqliteError& e) {
      if (!failing)
        observability::log_error("outbox '" + options_.outbox + "': " + e.what() +
                                 "; retrying (rows stay pending)");
      failing = true;
      wait = std::chrono::duration_cast<std::chrono::milliseconds>(kRetryAfterError);
    }
    lock.lock();
    if (wait > 0ms)
      wake_.wait_for(lock, wait, [&] { return stopping_; });
  }
}

}  // namespace warren::queue
