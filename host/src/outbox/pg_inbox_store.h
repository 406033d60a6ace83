// The processed-message store of an idempotent worker (`[[workers]] idempotency = { store =
// "postgres", dsn, retention }`): the dispatcher asks seen() before calling the handler and calls
// remember() just before the ack goes out. Rows live in warren_inbox(worker, message_id,
// processed_at); a background thread deletes this worker's rows older than `retention`, so a
// duplicate arriving later than that is no longer recognised.
//
// Connections: a small pool (one per handler thread at most, opened when first needed). A failed
// check or record throws PgError: the dispatcher then handles the message anyway / acks anyway
// (at-least-once), and the broken connection is dropped and reopened on the next call.
//
// Two deliveries of one message handled at the same moment on two threads (or two hosts) can both
// pass seen(): this store skips duplicates cheaply, it does not make an effect exactly-once. For
// that, write the warren_inbox row in the transaction of the effect (plugins/orders_projection).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "outbox/pg_connection.h"
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

  bool seen(const runtime::InboundMessage& message) override;
  void remember(const runtime::InboundMessage& message) override;

  // Deletes this worker's rows older than retention; returns how many.
  long prune_once();
  void start_pruning();
  void stop_pruning();

  // Connects and checks that warren_inbox exists; throws PgError saying what to do otherwise.
  void verify();

 private:
  std::unique_ptr<PgConnection> acquire();
  void release(std::unique_ptr<PgConnection> connection);
  template <typename F>
  auto with_connection(F&& body);

  const PgInboxStoreOptions options_;
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<PgConnection>> idle_;

  std::mutex prune_mutex_;
  std::condition_variable prune_cv_;
  bool stop_pruning_ = false;
  std::thread pruner_;
};

}  // namespace warren::outbox
