// What the table-queue engine (table_queue_transport.h) needs of the database under it: a write
// transaction, and in it the queue's statements. SQLite (sqlite_queue_database.h) and PostgreSQL
// (pg_queue_database.h) each answer it; the engine, its rounds, leases, heartbeat, rescue and
// pacing are written once.
//
// Times: the database keeps its own clock (a lease's expiry, a retry's due time), so the engine
// passes durations, never instants, and is told how long until a row falls due. Several hosts on
// one PostgreSQL share the server's clock rather than each its own.
//
// Calls come from one thread at a time (the engine holds its database mutex); every method but
// rollback() may throw QueueDatabaseError.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "queue/claimed_row.h"
#include "queue/queue_census.h"
#include "queue/queue_database_error.h"
#include "transport/message.h"
#include "transport/settlement.h"

namespace warren::queue {

class TableQueueDatabase {
 public:
  virtual ~TableQueueDatabase() = default;

  // How log lines name it: "sqlite queue", "postgres queue".
  virtual const char* log_name() const noexcept = 0;

  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;

  // One row for `queue`; a duplicate message id for that queue is ignored.
  virtual void insert(const std::string& queue, const transport::OutboundMessage& message,
                      const std::string& message_id) = 0;
  // Up to `limit` ready rows of `queue`, oldest due first, now running under a new lease. Only
  // rows that no host died holding (crashes = 0): see claim_suspect().
  virtual std::vector<ClaimedRow> claim(const std::string& queue, int limit,
                                        std::chrono::milliseconds lease) = 0;
  // The oldest ready row of `queue` that a host died holding (crashes > 0), if any. The engine
  // claims such a row alone, when its worker has nothing else in flight: if it kills the host
  // again, its neighbours are not held with it, and only its own count of lease expiries rises.
  virtual std::vector<ClaimedRow> claim_suspect(const std::string& queue,
                                                std::chrono::milliseconds lease) = 0;
  // The runtime's settlement of a claimed row; false when the lease is no longer ours (fencing):
  // nothing was changed.
  virtual bool settle(const ClaimedRow& row, const transport::Settlement& settlement) = 0;
  // Acks many rows in a few statements; for each lease in order, whether it was still ours.
  virtual std::vector<bool> ack_all(std::span<const RowLease> leases) = 0;
  // Dead-letters a row that cannot be delivered (its headers are not a JSON object...).
  virtual bool bury(const RowLease& lease, const std::string& reason) = 0;
  // Gives a row back unhandled (shutdown): pending again, marked redelivered.
  virtual bool release(const RowLease& lease) = 0;
  // Extends held leases; for each, whether it was still ours.
  virtual std::vector<bool> extend_all(std::span<const RowLease> leases,
                                       std::chrono::milliseconds lease) = 0;
  // Expired leases (and, where the database can tell, rows of owners that are gone) go back to
  // pending, counted in crashes; past kMaxLeaseExpiries the row is dead. Returns rows moved.
  virtual int rescue() = 0;
  // Deletes up to `limit` done rows finished longer than `retention` ago; returns how many.
  virtual int prune_done(std::chrono::milliseconds retention, int limit) = 0;
  // How many done rows one prune transaction deletes.
  virtual int prune_chunk() const noexcept { return 1000; }
  // How long until the next pending row of `queue` falls due (zero: due now; nullopt: none).
  virtual std::optional<std::chrono::milliseconds> next_due_in(const std::string& queue) = 0;

  // Polled every poll_interval: whether another process may have added rows since the last call.
  virtual bool changed_elsewhere() = 0;
  // Every queue that has rows, by name (QueueCensus::oldest_ready_due in this host's epoch ms).
  virtual std::map<std::string, QueueCensus> census() = 0;
  // The age of the oldest transaction holding back the database's cleanup, where that applies.
  virtual std::optional<double> oldest_transaction_seconds() { return std::nullopt; }

  // Calls `wake` (from any thread) when another process added rows, where the database can say
  // so; stop_watching() returns once `wake` is no longer called.
  virtual void watch(std::function<void()> wake) { (void)wake; }
  virtual void stop_watching() {}
  // Upkeep when the queue has been idle a while, and after a failed round (SQLite: checkpoint).
  // Errors are the method's own to swallow; when_idle() returns false to be called again later.
  virtual bool when_idle() noexcept { return true; }
  virtual void after_failure() noexcept {}
};

// Opens and commits a transaction; rolls back if not committed.
class DatabaseTransaction {
 public:
  explicit DatabaseTransaction(TableQueueDatabase& database) : database_(database) {
    database_.begin();
  }
  ~DatabaseTransaction() {
    if (open_)
      database_.rollback();
  }
  DatabaseTransaction(const DatabaseTransaction&) = delete;
  DatabaseTransaction& operator=(const DatabaseTransaction&) = delete;
  void commit() {
    database_.commit();
    open_ = false;
  }

 private:
  TableQueueDatabase& database_;
  bool open_ = true;
};

}  // namespace warren::queue
