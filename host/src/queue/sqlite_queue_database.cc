// See sqlite_queue_database.h.
#include "queue/sqlite_queue_database.h"

#include <algorithm>

#include "queue/sqlite_queue_census.h"
#include "queue/sqlite_schema.h"

namespace warren::queue {
namespace {

// The engine's page cache, in KiB. Claims and settlements touch the head of the ready index, the
// rows just claimed and the tails of the other indexes: a few dozen pages. SQLite's default
// (2 MiB) only adds to the host's resident memory; the operating system caches the file anyway.
constexpr int kCacheKib = 512;

}  // namespace

SqliteQueueDatabase::SqliteQueueDatabase(const SqliteDatabaseOptions& options) {
  SqliteOpenOptions open;
  open.path = options.path;
  open.synchronous_full = options.synchronous_full;
  open.busy_timeout = options.busy_timeout;
  connection_ = std::make_unique<SqliteConnection>(open);
  connection_->exec("PRAGMA cache_size = -" + std::to_string(kCacheKib));
  // The table's CHECK (status IN (...)) is for other writers: the engine's statements only
  // write status literals it allows. SQLite 3.40 checks that IN list by building a temporary
  // b-tree for every row an UPDATE touches, a fifth of the CPU of a settlement. Other
  // connections to the file still check.
  connection_->exec("PRAGMA ignore_check_constraints = ON");
  ensure_sqlite_schema(*connection_);
  store_ = std::make_unique<SqliteQueueStore>(*connection_, options.owner);
  data_version_ = connection_->data_version();
}

void SqliteQueueDatabase::begin() {
  connection_->exec("BEGIN IMMEDIATE");
}

void SqliteQueueDatabase::commit() {
  connection_->exec("COMMIT");
}

void SqliteQueueDatabase::rollback() noexcept {
  try {
    connection_->exec("ROLLBACK");
  } catch (...) {
    // A failed COMMIT can have rolled back already; nothing more to undo.
  }
}

void SqliteQueueDatabase::insert(const std::string& queue,
                                 const transport::OutboundMessage& message,
                                 const std::string& message_id) {
  store_->insert(queue, message, message_id, now_ms());
}

std::vector<ClaimedRow> SqliteQueueDatabase::claim(const std::string& queue, int limit,
                                                   std::chrono::milliseconds lease) {
  const std::int64_t now = now_ms();
  return store_->claim(queue, limit, now, now + lease.count());
}

std::vector<ClaimedRow> SqliteQueueDatabase::claim_suspect(const std::string& queue,
                                                           std::chrono::milliseconds lease) {
  const std::int64_t now = now_ms();
  return store_->claim(queue, 1, now, now + lease.count(), /*suspects=*/true);
}

bool SqliteQueueDatabase::settle(const ClaimedRow& row, const transport::Settlement& settlement) {
  return store_->settle(row, settlement, now_ms());
}

std::vector<bool> SqliteQueueDatabase::ack_all(std::span<const RowLease> leases) {
  return store_->ack_all(leases, now_ms());
}

bool SqliteQueueDatabase::bury(const RowLease& lease, const std::string& reason) {
  return store_->bury(lease, reason, now_ms());
}

bool SqliteQueueDatabase::release(const RowLease& lease) {
  return store_->release(lease);
}

std::vector<bool> SqliteQueueDatabase::extend_all(std::span<const RowLease> leases,
                                                  std::chrono::milliseconds lease) {
  const std::int64_t until = now_ms() + lease.count();
  std::vector<bool> kept;
  kept.reserve(leases.size());
  for (const RowLease& held : leases)
    kept.push_back(store_->extend(held, until));
  return kept;
}

int SqliteQueueDatabase::rescue() {
  return store_->rescue(now_ms());
}

int SqliteQueueDatabase::prune_done(std::chrono::milliseconds retention, int limit) {
  return store_->prune_done(now_ms() - retention.count(), limit);
}

std::optional<std::chrono::milliseconds> SqliteQueueDatabase::next_due_in(
    const std::string& queue) {
  const auto due = store_->next_due(queue);
  if (!due)
    return std::nullopt;
  return std::chrono::milliseconds(std::max<std::int64_t>(*due - now_ms(), 0));
}

bool SqliteQueueDatabase::changed_elsewhere() {
  const std::int64_t version = connection_->data_version();
  if (version == data_version_)
    return false;
  data_version_ = version;
  return true;
}

std::map<std::string, QueueCensus> SqliteQueueDatabase::census() {
  return take_queue_census(*connection_, now_ms());
}

bool SqliteQueueDatabase::when_idle() noexcept {
  return checkpoint();
}

void SqliteQueueDatabase::after_failure() noexcept {
  // A full disk can be the write-ahead log's own doing: it grows until a checkpoint copies it
  // into the database, and the automatic one waits for 1000 pages. Copying it now and truncating
  // it gives the space back, so the next round can commit without anyone freeing space.
  (void)checkpoint();
}

bool SqliteQueueDatabase::checkpoint() noexcept {
  try {
    connection_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    return true;
  } catch (...) {
    // Busy with another process's reader, or still no room: the next chance tries again.
    return false;
  }
}

}  // namespace warren::queue
