// [[outbox]] store = "sqlite": the application writes its data and a warren_outbox row in one
// transaction of the queue's own SQLite file; this relay routes each row into warren_queue by the
// configured bindings IN THE SAME TRANSACTION that marks it sent. Exactly once, no broker, no
// confirm to wait for: a crash before the commit leaves the row pending, after it the queue rows
// exist. A row whose exchange does not exist, or that no queue is bound for, is `dead` with the
// reason (nothing would change by trying again; fix the config, then set it back to pending).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "observability/health.h"
#include "observability/metrics.h"
#include "queue/sqlite_connection.h"
#include "transport/routing.h"

namespace warren::queue {

struct SqliteOutboxOptions {
  std::string outbox;          // the [[outbox]] name (metrics, logs)
  std::filesystem::path path;  // the queue's database file
  bool synchronous_full = true;
  std::string default_exchange;  // for rows whose exchange is ''
  int batch = 100;
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds busy_timeout{10000};
  // Sent rows older than this (by sent_at) are deleted, `prune_chunk` rows a write transaction,
  // every prune_interval (zero: retention / 2, between 1 s and 1 h).
  std::chrono::milliseconds sent_retention{std::chrono::hours(24 * 7)};
  std::chrono::milliseconds prune_interval{0};
  int prune_chunk = 1000;
};

// What one round did.
struct OutboxRoundResult {
  int sent = 0;  // rows routed into the queue and marked sent
  int dead = 0;  // rows that cannot be routed
};

class SqliteOutboxRelay {
 public:
  // Opens its own connection to the file (the schema must exist: the transport creates it).
  SqliteOutboxRelay(SqliteOutboxOptions options, transport::RoutingTable routing,
                    observability::Metrics* metrics, observability::Health* health);
  ~SqliteOutboxRelay();  // stop()s
  SqliteOutboxRelay(const SqliteOutboxRelay&) = delete;
  SqliteOutboxRelay& operator=(const SqliteOutboxRelay&) = delete;

  void start();
  void stop();

  // One transaction over up to `batch` pending rows (the relay's thread calls it; tests too).
  OutboxRoundResult relay_once();

 private:
  void run();
  void refresh_stats();
  // Deletes sent rows past the retention, a chunk a write transaction (other writers get the lock
  // between chunks), until a chunk comes back short or the relay stops.
  void prune_sent();

  const SqliteOutboxOptions options_;
  const transport::RoutingTable routing_;
  observability::Metrics* metrics_;
  std::shared_ptr<observability::LoopHeartbeat> heartbeat_;
  std::unique_ptr<SqliteConnection> connection_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace warren::queue
