// The PostgreSQL database under the table-queue engine (table_queue_database.h), for several
// hosts on one database (the third seed article's system, FOR UPDATE SKIP LOCKED).
//
// One connection, its statements prepared once per connection. A claim is one statement per
// batch: a MATERIALIZED CTE picks ready rows LIMIT n FOR UPDATE SKIP LOCKED (other hosts skip the
// rows this one locked instead of waiting for them) and the UPDATE ... RETURNING marks them
// running under a new lease and lease_token + 1 (without MATERIALIZED the planner may inline the
// CTE and update more rows than the limit). Settlements and lease extensions go in batches,
// fenced by lease_token. Times are the server's clock (now()), shared by every host.
//
// A lost connection throws a transient error; the next begin() connects again (the engine keeps
// its settlements meanwhile and backs off). New rows of other hosts are announced by the insert
// trigger's NOTIFY, which pg_queue_listener.h turns into a wake-up of the engine; polling every
// poll_interval is the fallback, since a notification sent while disconnected is lost.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "postgres/pg_connection.h"
#include "queue/pg_queue_listener.h"
#include "queue/table_queue_database.h"

namespace warren::queue {

struct PgDatabaseOptions {
  std::string dsn;  // never logged
  std::string schema = "public";
  std::string owner;  // lease_owner of this process's claims: "host/pid"
  std::chrono::milliseconds connect_timeout{10000};
};

class PgQueueDatabase final : public TableQueueDatabase {
 public:
  // Connects and creates the schema when missing (ensure_pg_queue_schema). Throws
  // QueueDatabaseError naming the server (never the password) and why.
  explicit PgQueueDatabase(PgDatabaseOptions options);
  ~PgQueueDatabase() override;

  const char* log_name() const noexcept override { return "postgres queue"; }
  void begin() override;
  void commit() override;
  void rollback() noexcept override;
  void insert(const std::string& queue, const transport::OutboundMessage& message,
              const std::string& message_id) override;
  std::vector<ClaimedRow> claim(const std::string& queue, int limit,
                                std::chrono::milliseconds lease) override;
  std::vector<ClaimedRow> claim_suspect(const std::string& queue,
                                        std::chrono::milliseconds lease) override;
  bool settle(const ClaimedRow& row, const transport::Settlement& settlement) override;
  std::vector<bool> ack_all(std::span<const RowLease> leases) override;
  bool bury(const RowLease& lease, const std::string& reason) override;
  bool release(const RowLease& lease) override;
  std::vector<bool> extend_all(std::span<const RowLease> leases,
                               std::chrono::milliseconds lease) override;
  int rescue() override;
  int prune_done(std::chrono::milliseconds retention, int limit) override;
  int prune_chunk() const noexcept override { return 5000; }
  std::optional<std::chrono::milliseconds> next_due_in(const std::string& queue) override;
  bool changed_elsewhere() override { return true; }
  std::map<std::string, QueueCensus> census() override;
  std::optional<double> oldest_transaction_seconds() override;
  void watch(std::function<void()> wake) override;
  void stop_watching() override;

 private:
  // The connection, opened (and its statements prepared) when there is none.
  postgres::PgConnection& connection();
  // Runs a prepared statement; a PostgreSQL error becomes a QueueDatabaseError, and a lost
  // connection is dropped so that the next begin() opens a new one.
  postgres::PgResult run(const char* name, const std::vector<std::optional<std::string>>& params,
                         bool binary_results = false);
  std::vector<ClaimedRow> claim_with(const char* statement, const std::string& queue, int limit,
                                     std::chrono::milliseconds lease);
  std::vector<bool> applied_by_id(const postgres::PgResult& result,
                                  std::span<const RowLease> leases) const;

  const PgDatabaseOptions options_;
  std::unique_ptr<postgres::PgConnection> connection_;
  std::unique_ptr<PgQueueListener> listener_;
};

}  // namespace warren::queue
