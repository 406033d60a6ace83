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

std::unique_ptr<postgres::PgConnection> PgInboxStore::acquire() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  postgres::PgConnectOptions connect;
  connect.dsn = options_.dsn;
  connect.application_name = "warren inbox " + options_.worker;
  connect.connect_timeout = std::chrono::seconds(5);
  auto connection = std::make_unique<postgres::PgConnection>(connect);
  connection->exec("SET statement_timeout = 10000");
  return connection;
}

void PgInboxStore::release(std::unique_ptr<postgres::PgConnection> connection) {
  if (!connection || !connection->ok())
    return;
  std::lock_guard lock(pool_mutex_);
  idle_.push_back(std::move(connection));
}

namespace {

// A missing table gets what to do about it; other errors go as they are.
[[noreturn]] void rethrow_with_hint(const postgres::PgError& error) {
  if (error.undefined_table()) {
    throw postgres::PgError(std::string(error.what()) +
                                "; create it with `warren outbox init -c FILE` (sql/outbox.sql)",
                            error.sqlstate(), error.connection_lost());
  }
  throw error;
}

}  // namespace

template <typename F>
auto PgInboxStore::with_connection(F&& body) {
  auto connection = acquire();
  try {
    auto result = body(*connection);
    release(std::move(connection));
    return result;
  } catch (const postgres::PgError& error) {
    if (connection->ok() && !error.connection_lost())
      release(std::move(connection));
    rethrow_with_hint(error);
  }
}

// The open transaction holding the id's advisory lock, and its connection.
class PgInboxStore::Claim final : public runtime::ProcessingClaim {
 public:
  Claim(PgInboxStore& store, std::unique_ptr<postgres::PgConnection> db, std::string worker,
        std::string message_id)
      : store_(store),
        db_(std::move(db)),
        worker_(std::move(worker)),
        message_id_(std::move(message_id)) {}
  ~Claim() override { store_.end_transaction(std::move(db_), "ROLLBACK"); }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;

  void processed() override {
    auto db = std::move(db_);
    try {
      // ON CONFLICT: the handler may have recorded the id in its own transaction already
      // (orders_projection); the claim then has nothing to add.
      db->exec_params(
          "INSERT INTO warren_inbox (worker, message_id) VALUES ($1, $2) "
          "ON CONFLICT (worker, message_id) DO NOTHING",
          {worker_, message_id_});
      db->exec("COMMIT");
    } catch (const postgres::PgError&) {
      store_.end_transaction(std::move(db), "ROLLBACK");
      throw;
    }
    store_.release(std::move(db));
  }

 private:
  PgInboxStore& store_;
  std::unique_ptr<postgres::PgConnection> db_;
  const std::string worker_;
  const std::string message_id_;
};

void PgInboxStore::end_transaction(std::unique_ptr<postgres::PgConnection> db,
                                   const char* statement) noexcept {
  if (!db)
    return;
  try {
    db->exec(statement);
    release(std::move(db));
  } catch (const std::exception&) {
    // A connection that cannot even roll back is dropped; the server ends its transaction.
  }
}

std::unique_ptr<runtime::ProcessingClaim> PgInboxStore::claim(
    const transport::InboundMessage& message) {
  auto db = acquire();
  try {
    db->exec("BEGIN");
    // No statement timeout here: while another copy's handler holds this id the lock waits for
    // its outcome, however long the handler takes; timing out would run the handler twice.
    db->exec("SET LOCAL statement_timeout = 0");
    // A lock, not the row: a handler may insert the row in its own transaction (orders_projection)
    // and must not wait for this one. Two ids sharing a hash only wait for each other.
    db->exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1 || E'\\n' || $2, 0))",
                    {options_.worker, message.message_id});
    // Read after the lock: a copy that held it and committed is seen here.
    const bool processed =
        db->exec_params("SELECT 1 FROM warren_inbox WHERE worker = $1 AND message_id = $2",
                        {options_.worker, message.message_id})
            .rows() > 0;
    if (processed) {
      end_transaction(std::move(db), "ROLLBACK");
      return nullptr;  // a duplicate
    }
    return std::make_unique<Claim>(*this, std::move(db), options_.worker, message.message_id);
  } catch (const postgres::PgError& error) {
    if (db->ok() && !error.connection_lost())
      end_transaction(std::move(db), "ROLLBACK");
    rethrow_with_hint(error);
  }
}

bool PgInboxStore::seen(const transport::InboundMessage& message) {
  return with_connection([&](postgres::PgConnection& db) {
    return db.exec_params("SELECT 1 FROM warren_inbox WHERE worker = $1 AND message_id = $2",
                          {options_.worker, message.message_id})
               .rows() > 0;
  });
}

void PgInboxStore::remember(const transport::InboundMessage& message) {
  with_connection([&](postgres::PgConnection& db) {
    db.exec_params(
        "INSERT INTO warren_inbox (worker, message_id) VALUES ($1, $2) "
        "ON CONFLICT (worker, message_id) DO NOTHING",
        {options_.worker, message.message_id});
    return 0;
  });
}

long PgInboxStore::prune_once() {
  return with_connection([&](postgres::PgConnection& db) {
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
  with_connection([&](postgres::PgConnection& db) {
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
