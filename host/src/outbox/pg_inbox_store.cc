// See pg_inbox_store.h.
#include "outbox/pg_inbox_store.h"

#include <algorithm>

#include "observability/log.h"

namespace warren::outbox {
namespace {

std::chrono::milliseconds prune_interval(const PgInboxStoreOptions& options) {
  if (options.prune_interval.count() > 0)
    return options.prune_interval;
  return std::clamp<std::chrono::milliseconds>(options.retention / 2, std::chrono::seconds(1),
                                               std::chrono::hours(1));
}

constexpr long kPruneChunk = 10000;

}  // namespace

PgInboxStore::PgInboxStore(PgInboxStoreOptions options) : options_(std::move(options)) {}

PgInboxStore::~PgInboxStore() {
  stop_pruning();
}

std::unique_ptr<PgConnection> PgInboxStore::acquire() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  PgConnectOptions connect;
  connect.dsn = options_.dsn;
  connect.application_name = "warren inbox " + options_.worker;
  connect.connect_timeout = std::chrono::seconds(5);
  auto connection = std::make_unique<PgConnection>(connect);
  connection->exec("SET statement_timeout = 10000");
  return connection;
}

void PgInboxStore::release(std::unique_ptr<PgConnection> connection) {
  if (!connection || !connection->ok())
    return;
  std::lock_guard lock(pool_mutex_);
  idle_.push_back(std::move(connection));
}

template <typename F>
auto PgInboxStore::with_connection(F&& body) {
  auto connection = acquire();
  try {
    auto result = body(*connection);
    release(std::move(connection));
    return result;
  } catch (const PgError& error) {
    if (connection->ok() && !error.connection_lost())
      release(std::move(connection));
    if (error.undefined_table()) {
      throw PgError(std::string(error.what()) +
                        "; create it with `warren outbox init -c FILE` (sql/outbox.sql)",
                    error.sqlstate(), error.connection_lost());
    }
    throw;
  }
}

bool PgInboxStore::seen(const runtime::InboundMessage& message) {
  return with_connection([&](PgConnection& db) {
    return db.exec_params("SELECT 1 FROM warren_inbox WHERE worker = $1 AND message_id = $2",
                          {options_.worker, message.message_id})
               .rows() > 0;
  });
}

void PgInboxStore::remember(const runtime::InboundMessage& message) {
  with_connection([&](PgConnection& db) {
    db.exec_params(
        "INSERT INTO warren_inbox (worker, message_id) VALUES ($1, $2) "
        "ON CONFLICT (worker, message_id) DO NOTHING",
        {options_.worker, message.message_id});
    return 0;
  });
}

long PgInboxStore::prune_once() {
  return with_connection([&](PgConnection& db) {
    long total = 0;
    for (;;) {
      // In chunks, each its own short transaction: no long lock on a big table.
      const long deleted =
          db.exec_params(
                "DELETE FROM warren_inbox WHERE ctid = ANY(ARRAY("
                "  SELECT ctid FROM warren_inbox WHERE worker = $1 "
                "  AND processed_at < clock_timestamp() - $2::bigint * interval '1 millisecond' "
                "  LIMIT $3))",
                {options_.worker, std::to_string(options_.retention.count()),
                 std::to_string(kPruneChunk)})
              .affected_rows();
      total += deleted;
      if (deleted < kPruneChunk)
        return total;
    }
  });
}

void PgInboxStore::verify() {
  with_connection([&](PgConnection& db) {
    db.exec("SELECT 1 FROM warren_inbox LIMIT 0");
    return 0;
  });
}

void PgInboxStore::start_pruning() {
  if (pruner_.joinable())
    return;
  pruner_ = std::thread([this] {
    const auto interval = prune_interval(options_);
    std::unique_lock lock(prune_mutex_);
    while (!stop_pruning_) {
      lock.unlock();
      try {
        const long pruned = prune_once();
        if (pruned > 0) {
          observability::log(observability::LogLevel::info,
                             observability::LogFields::for_worker(options_.worker),
                             "pruned " + std::to_string(pruned) +
                                 " processed-message record(s) older than the retention");
        }
      } catch (const std::exception& e) {
        observability::log(observability::LogLevel::warn,
                           observability::LogFields::for_worker(options_.worker),
                           std::string("cannot prune warren_inbox: ") + e.what());
      }
      lock.lock();
      prune_cv_.wait_for(lock, interval, [this] { return stop_pruning_; });
    }
  });
}

void PgInboxStore::stop_pruning() {
  {
    std::lock_guard lock(prune_mutex_);
    stop_pruning_ = true;
  }
  prune_cv_.notify_all();
  if (pruner_.joinable())
    pruner_.join();
}

}  // namespace warren::outbox
