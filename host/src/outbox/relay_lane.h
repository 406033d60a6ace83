// One claim -> publish -> record round of an outbox relay, on one OutboxStore (one PostgreSQL
// connection). OutboxRelay runs one or more lanes, each on a thread of its own; the lanes of one
// relay, like the relays of several hosts, never publish the same row at once (SKIP LOCKED).
//
// The order inside a round is what makes the relay safe:
//   claim (rows locked, transaction open) -> publish all, wait for every confirm ->
//   record sent / failed in the same transaction -> commit.
// A row is marked sent only after its confirm; a crash anywhere before the commit leaves it
// pending (the lock goes with the connection) and it is published again: at least once, and a
// duplicate only for rows of the batch in flight at the crash.
#pragma once

#include <chrono>
#include <string>

#include "outbox/outbox_store.h"
#include "outbox/retry_schedule.h"
#include "outbox/row_publisher.h"

namespace prometheus {
class Counter;
}

namespace warren::outbox {

struct RelayLaneOptions {
  std::string outbox;            // the [[outbox]] name, for logs
  std::string default_exchange;  // for rows whose exchange is ''
  int batch = 100;
  int lane = 0;  // which lane of the relay, for logs
};

class RelayLane {
 public:
  // What the round found, so the loop knows whether to go on at once or wait.
  enum class Step {
    batch_full,           // more rows are probably due: go again
    batch_partial,        // published what was due: wait for a NOTIFY or the poll interval
    nothing_due,          // the same, with nothing done
    publisher_not_ready,  // the broker is away or blocking: claimed nothing, try again shortly
    store_failed,         // PostgreSQL failed: nothing recorded, back off
  };

  RelayLane(RelayLaneOptions options, OutboxStore& store, RowPublisher& publisher,
            const RetrySchedule& schedule, prometheus::Counter* relayed);

  Step step();
  // Why the last step() returned store_failed.
  const std::string& last_error() const noexcept { return last_error_; }

 private:
  void log_failures(const BatchVerdict& verdict) const;

  const RelayLaneOptions options_;
  OutboxStore& store_;
  RowPublisher& publisher_;
  const RetrySchedule& schedule_;
  prometheus::Counter* relayed_;
  std::uint64_t batches_ = 0;
  std::string last_error_;
};

}  // namespace warren::outbox
