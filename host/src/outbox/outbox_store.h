// The relay's view of the outbox table (the seam that lets the relay's loop be tested with a fake;
// pg_outbox_store.h is the PostgreSQL implementation).
//
// A batch is one transaction: claim() opens it and locks the rows, complete() records the verdict
// and commits. The locks are held while the rows are published, which is what keeps another relay
// (SKIP LOCKED) from publishing the same rows; a relay that dies releases them with its connection
// and the rows, still pending, are published again.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "outbox/batch_verdict.h"
#include "outbox/outbox_row.h"

namespace warren::outbox {

struct OutboxStats {
  long pending = 0;
  long dead = 0;
  std::optional<double> oldest_pending_age_seconds;  // none when nothing is pending
};

class OutboxStore {
 public:
  virtual ~OutboxStore() = default;
  // Opens a transaction and locks up to `limit` pending rows that are due, oldest first, skipping
  // rows another relay holds. An empty result still leaves the transaction open (abandon() it).
  virtual std::vector<OutboxRow> claim(int limit) = 0;
  // Records the verdict and commits (releasing the locks). Throws on failure: nothing recorded.
  virtual void complete(const BatchVerdict& verdict) = 0;
  // Rolls back whatever is open. Never throws.
  virtual void abandon() noexcept = 0;
  // Returns when a NOTIFY warren_outbox arrived, `timeout` passed or `wake_fd` became readable.
  virtual void wait_for_work(std::chrono::milliseconds timeout, int wake_fd) = 0;
  virtual OutboxStats stats() = 0;
  // Deletes up to `limit` sent rows published more than `older_than` ago, in a transaction of its
  // own (call it between batches); returns how many. The relay calls it again while it gets a
  // full chunk, so a big backlog goes in short transactions, not one long lock.
  virtual long prune_sent(std::chrono::milliseconds older_than, int limit) = 0;
};

}  // namespace warren::outbox
