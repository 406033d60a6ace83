// The SQL of the SQLite table queue, one method per statement, on a connection the caller guards
// and inside transactions the caller opens (so that a claim and the settlements before it share
// one commit). Rows are fenced by lease_token: a settlement, a lease extension or a release
// applies only while the row is still running under the token its claim returned, so a row that
// was rescued and claimed again is never settled by its old owner.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "queue/claimed_row.h"
#include "queue/sqlite_connection.h"
#include "transport/message.h"
#include "transport/settlement.h"

namespace warren::queue {

// Milliseconds since the Unix epoch: how the queue tables store times.
std::int64_t now_ms();

class SqliteQueueStore {
 public:
  // `owner`: "host/pid", written into lease_owner.
  SqliteQueueStore(SqliteConnection& connection, std::string owner);

  const std::string& owner() const noexcept { return owner_; }

  // One row for `queue` (a duplicate message id for that queue is ignored, as the table says).
  void insert(const std::string& queue, const transport::OutboundMessage& message,
              const std::string& message_id, std::int64_t now);

  // Up to `limit` ready rows of `queue`, oldest due first, now running under a new lease: rows no
  // host died holding (crashes = 0), or with `suspects`, only rows one did (crashes > 0).
  std::vector<ClaimedRow> claim(const std::string& queue, int limit, std::int64_t now,
                                std::int64_t lease_until, bool suspects = false);

  // Carries out the runtime's settlement of a claimed row. False when the lease is no longer
  // this owner's (rescued, and perhaps claimed again): nothing was changed.
  bool settle(const ClaimedRow& row, const transport::Settlement& settlement, std::int64_t now);
  // Acks many rows at once: the same as settle() with an ack for each, in a few statements
  // instead of one each (a third of the CPU of a settlement round at batch 32, bench/queue).
  // Returns, for each lease in order, whether it was still this owner's and is now done.
  std::vector<bool> ack_all(std::span<const RowLease> leases, std::int64_t now);
  // Dead-letters a row that cannot be delivered (its headers are not JSON...).
  bool bury(const RowLease& lease, const std::string& reason, std::int64_t now);
  // Gives a row back unhandled (shutdown): pending again, marked redelivered.
  bool release(const RowLease& lease);
  // Extends a held lease; false when it was lost.
  bool extend(const RowLease& lease, std::int64_t lease_until);

  // Rows whose lease expired before `now`, or whose owner on this machine is no longer running,
  // go back to pending (counted in crashes); past kMaxLeaseExpiries they are dead. Returns how
  // many rows it moved.
  int rescue(std::int64_t now);
  // Deletes up to `limit` done rows finished before `before`; returns how many.
  int prune_done(std::int64_t before, int limit);
  // When the next pending row of `queue` is due (nullopt: none pending).
  std::optional<std::int64_t> next_due(const std::string& queue);

 private:
  bool owner_is_gone(const std::string& owner) const;
  // The ack of exactly `rows` leases (1 to kAckChunk), prepared on first use.
  Statement& ack_statement(std::size_t rows);

  SqliteConnection& connection_;
  const std::string owner_;
  Statement insert_;
  Statement claim_;
  Statement claim_suspect_;
  Statement done_;
  Statement pending_again_;
  Statement retry_;
  Statement dead_;
  Statement extend_;
  Statement expired_;
  Statement owners_;
  Statement prune_;
  Statement next_due_;
  std::vector<std::unique_ptr<Statement>> ack_statements_;  // by rows - 1
};

}  // namespace warren::queue
