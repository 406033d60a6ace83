// The SQLite file under the table-queue engine (table_queue_database.h): one connection, the
// queue's statements (sqlite_queue_store.h), PRAGMA data_version to see other processes' commits,
// and WAL checkpoints when idle or after a failed write. Times are this host's clock, in ms since
// the epoch, as the file stores them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "queue/sqlite_connection.h"
#include "queue/sqlite_queue_store.h"
#include "queue/table_queue_database.h"

namespace warren::queue {

struct SqliteDatabaseOptions {
  std::filesystem::path path;
  bool synchronous_full = true;
  // How long a write waits for another process's write lock before it fails (and is retried).
  std::chrono::milliseconds busy_timeout{10000};
  std::string owner;  // lease_owner of this process's claims: "host/pid"
};

class SqliteQueueDatabase final : public TableQueueDatabase {
 public:
  // Opens the file (creating it and the schema when missing). Throws SqliteError naming the
  // file and why when it cannot be opened or written (corrupt, read-only, a newer schema).
  explicit SqliteQueueDatabase(const SqliteDatabaseOptions& options);

  const char* log_name() const noexcept override { return "sqlite queue"; }
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
  std::optional<std::chrono::milliseconds> next_due_in(const std::string& queue) override;
  bool changed_elsewhere() override;
  std::map<std::string, QueueCensus> census() override;
  bool when_idle() noexcept override;
  void after_failure() noexcept override;

 private:
  bool checkpoint() noexcept;

  std::unique_ptr<SqliteConnection> connection_;
  std::unique_ptr<SqliteQueueStore> store_;
  std::int64_t data_version_ = 0;
};

}  // namespace warren::queue
