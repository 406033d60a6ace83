// The processed-message store of an idempotent worker (`[[workers]] idempotency = { store =
// "postgres", dsn, retention }`). Before calling the handler the dispatcher claims the message id:
// a transaction takes an advisory lock on (worker, message_id), then looks for the id in
// warren_inbox(worker, message_id, processed_at), and stays open while the handler runs;
// processed() inserts the row and commits just before the ack, and a failed attempt rolls back
// (so its retry runs). A copy claimed at the same moment on another thread or host waits on the
// lock until the first copy commits (then it finds the row: a duplicate) or rolls back (it runs).
// A host that dies mid-handler loses its connection, and with it the lock. A lock rather than
// the row itself, because a handler may insert that row in its own transaction
// (plugins/orders_projection), which must not wait for the claim.
// A background thread deletes this worker's rows older than `retention`, so a duplicate arriving
// later than that is no longer recognised.
//
// Connections: a small pool (one per handler thread at most, opened when first needed; a claim
// holds its connection until it ends). A failed claim or record throws postgres::PgError: the
// dispatcher then handles the message anyway / acks anyway (at-least-once), and the broken
// connection is dropped and reopened on the next call.
//
// This skips duplicates; it does not make an effect exactly-once (a host can die between the
// effect and the commit). For that, write the warren_inbox row in the transaction of the effect
// (plugins/orders_projection).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "postgres/pg_connection.h"
#include "runtime/dispatcher.h"

namespace warren::outbox {

struct PgInboxStoreOptions {
  std::string worker;
  std::string dsn;
  std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
  // How often old rows are pruned; zero: retention / 2, between 1 s and 1 h.
  std::chrono::milliseconds prune_interval{0};
};

class PgInboxStore final : public runtime::DuplicateFilter {
 public:
  explicit PgInboxStore(PgInboxStoreOptions options);
  ~PgInboxStore() override;  // stops pruning
  PgInboxStore(const PgInboxStore&) = delete;
  PgInboxStore& operator=(const PgInboxStore&) = delete;

  std::unique_ptr<runtime::ProcessingClaim> claim(
      const transport::InboundMessage& message) override;

  // Outside of handling (tests, tools): whether the id is recorded; record it.
  bool seen(const transport::InboundMessage& message);
  void remember(const transport::InboundMessage& message);

  // Deletes this worker's rows older than retention; returns how many.
  long prune_once();
  void start_pruning();
  void stop_pruning();

  // Connects and checks that warren_inbox exists; throws postgres::PgError saying what to do
  // otherwise.
  void verify();

 private:
  std::unique_ptr<postgres::PgConnection> acquire();
  void release(std::unique_ptr<postgres::PgConnection> connection);
  // Runs COMMIT or ROLLBACK and returns the connection to the pool; drops it if that fails.
  void end_transaction(std::unique_ptr<postgres::PgConnection> db, const char* statement) noexcept;
  class Claim;
  template <typename F>
  auto with_connection(F&& body);

  const PgInboxStoreOptions options_;
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<postgres::PgConnection>> idle_;

  std::mutex prune_mutex_;
  std::condition_variable prune_cv_;
  bool stop_pruning_ = false;
  std::thread pruner_;
};

}  // namespace warren::outbox
