// OutboxStore on PostgreSQL: one connection of its own (reconnected on the next call after it
// broke), LISTEN warren_outbox on it, and a session that bounds how long a batch may hold its
// row locks (idle_in_transaction_session_timeout), so a relay that hangs cannot keep rows from
// the others forever.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "outbox/outbox_store.h"
#include "postgres/pg_connection.h"

namespace warren::outbox {

struct PgOutboxStoreOptions {
  std::string outbox;  // the [[outbox]] name, for messages and application_name
  std::string dsn;
  // Longer than a batch can take to publish (publish_timeout plus a margin): a batch still waiting
  // for confirms must never lose its locks to this timeout, or another relay would publish the
  // same rows while this one still may.
  std::chrono::milliseconds idle_in_transaction_timeout{40000};
  std::chrono::milliseconds statement_timeout{30000};
};

class PgOutboxStore final : public OutboxStore {
 public:
  explicit PgOutboxStore(PgOutboxStoreOptions options);
  ~PgOutboxStore() override;

  std::vector<OutboxRow> claim(int limit) override;
  void complete(const BatchVerdict& verdict) override;
  void abandon() noexcept override;
  void wait_for_work(std::chrono::milliseconds timeout, int wake_fd) override;
  OutboxStats stats() override;
  long prune_sent(std::chrono::milliseconds older_than, int limit) override;

  // The connection whose transaction holds the batch claim() returned (queue_row_publisher.h
  // writes into it). Only between claim() and complete() / abandon().
  postgres::PgConnection& batch_connection() { return connection(); }

 private:
  postgres::PgConnection& connection();  // connects when needed; throws postgres::PgError
  template <typename F>
  auto guarded(F&& body);  // drops a broken connection before rethrowing

  const PgOutboxStoreOptions options_;
  std::unique_ptr<postgres::PgConnection> connection_;
  bool notified_ = false;  // a NOTIFY arrived that no wait has consumed yet
};

}  // namespace warren::outbox
