// The broker-less transports: a durable queue in a database table (the third seed article's
// system, where the table the application writes in its own transaction *is* the queue). The
// engine is written once here; the database under it is SQLite (sqlite_transport.h) or
// PostgreSQL (pg_transport.h), each behind table_queue_database.h.
//
// One engine thread per process owns the database work: in one transaction it applies the
// settlements the workers handed back since the last round and claims ready rows for every
// subscription with room in its prefetch, then hands the claimed rows to the sinks. Rows are
// claimed under a lease (owner, expiry, fencing token); a heartbeat extends the leases of the
// rows still held, and expired leases (a host killed with kill -9) go back to pending. The
// engine wakes on this process's own inserts, on settlements, when a retry falls due, when the
// database says another process added rows, and every poll_interval to ask it.
//
// Settlements, the table way:
//   ack          -> status 'done' (deleted after the retention)
//   requeue      -> status 'pending' again, marked redelivered
//   retry_later  -> status 'pending', next_attempt_at = now + delay, attempts = the failed one
//   dead_letter  -> status 'dead' with last_error and the x-warren-* reason headers
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "observability/health.h"
#include "observability/metrics.h"
#include "queue/table_queue_database.h"
#include "transport/routing.h"
#include "transport/transport.h"

namespace warren::queue {

struct TableQueueOptions {
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds lease{300000};
  std::chrono::milliseconds retention{3600000};
};

// "HOST/PID" for this process: the lease_owner of its claims.
std::string lease_owner_for(const std::string& host_name);

class TableQueueTransport : public transport::Transport {
 public:
  TableQueueTransport(std::unique_ptr<TableQueueDatabase> database, TableQueueOptions options,
                      transport::RoutingTable routing, observability::Health* health,
                      observability::Metrics* metrics = nullptr);
  ~TableQueueTransport() override;

  void start(const std::vector<transport::Subscription>& subscriptions) override;
  void stop_consuming() override;
  void stop_consuming(const std::string& worker) override;
  void close() override;
  bool ready() const noexcept override;
  // Routes by the bindings and inserts one row per queue reached, in one transaction.
  void publish(const transport::OutboundMessage& message) override;

  // Settlements dropped because the row's lease was no longer this process's (fencing).
  std::uint64_t stale_settlements() const noexcept { return stale_settlements_.load(); }

 private:
  class RowDelivery;
  struct Subscriber;
  // A claimed row, shared by its delivery, the engine's held_ and the settlement on its way back:
  // one allocation, which the engine thread made and usually frees (the last owner is the
  // settlement), so that the worker thread rarely frees into the engine's malloc arena.
  struct ClaimedState {
    static constexpr std::size_t kNotHeld = static_cast<std::size_t>(-1);
    ClaimedRow row;
    std::atomic<bool> stale{false};  // the lease was lost: the runtime must not handle it
    bool suspect = false;  // claimed alone, as a row some host died holding (claim_suspect)
    // Its place in held_ (guarded by mutex_), so that settling it needs no lookup by id: two
    // claims of one row (the first one's lease expired) are two entries, each settled alone.
    mutable std::size_t held_slot = kNotHeld;
  };
  struct Settling {
    std::shared_ptr<const ClaimedState> state;
    std::size_t subscriber = 0;
    transport::Settlement settlement;
  };
  struct Held {
    std::size_t subscriber = 0;
    std::shared_ptr<ClaimedState> state;
  };
  using Clock = std::chrono::steady_clock;

  void settle(Settling settling);
  void run();
  // One transaction: the queued settlements, then claims. Returns false when the database
  // refused (the settlements are kept for the next round).
  bool round(std::vector<Settling>& settlements);
  // Writes the settlements in the open transaction; for each, whether its lease was still ours.
  std::vector<bool> write_settlements(const std::vector<Settling>& settlements);
  void heartbeat();
  void rescue();
  void prune();
  void poll_other_processes();
  void upkeep_when_idle();
  void publish_census();
  void note_oldest_transaction(double seconds);
  void on_database_changed();
  void release_held();
  // held_'s bookkeeping, under mutex_: no allocation per row once held_ has grown to prefetch.
  void hold(std::size_t subscriber, std::shared_ptr<ClaimedState> state);
  void unhold(const ClaimedState& state);
  void note_write(bool ok, const std::string& what);

  const TableQueueOptions options_;
  const transport::RoutingTable routing_;
  std::shared_ptr<observability::LoopHeartbeat> loop_heartbeat_;
  observability::Metrics* metrics_;

  // The database, shared by the engine and publishing threads.
  mutable std::mutex db_mutex_;
  std::unique_ptr<TableQueueDatabase> database_;
  const std::string log_prefix_;  // "sqlite queue: "

  // Engine state, shared with workers settling and threads publishing.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Subscriber>> subscribers_;
  std::vector<Settling> settlements_;
  std::vector<Held> held_;  // claimed and not yet settled in the table, in no order
  bool wake_requested_ = false;
  std::optional<Clock::time_point> flush_at_;  // when the queued settlements must be written
  std::atomic<bool> nudged_{false};  // wake_requested_ by a settlement, readable without the lock
  bool in_round_ = false;  // the engine is between taking work and handing over claimed rows
  std::atomic<bool> consuming_{false};
  bool stopping_ = false;
  std::atomic<bool> healthy_{true};
  std::atomic<bool> started_{false};
  std::atomic<std::uint64_t> stale_settlements_{0};
  Clock::time_point last_activity_{};
  bool idle_upkeep_done_ = true;
  bool warned_old_transaction_ = false;  // engine thread only
  std::chrono::milliseconds retry_backoff_{0};

  std::thread engine_;
};

}  // namespace warren::queue
