// One [[outbox]] relay inside `warren run`: `lanes` threads, each running RelayLane rounds on a
// PostgreSQL connection of its own, sharing one publisher. Between rounds a lane waits for
// NOTIFY warren_outbox (a hint, lost while disconnected) or the poll interval, whichever comes
// first. Lane 0 also refreshes warren_outbox_pending / _dead / _lag_seconds every few seconds, and
// deletes sent rows older than the retention (so the table does not grow without bound).
// PostgreSQL failures are retried with backoff; the publisher reconnects to the broker by itself.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "observability/health.h"
#include "observability/metrics.h"
#include "outbox/outbox_store.h"
#include "outbox/relay_lane.h"
#include "outbox/retry_schedule.h"
#include "outbox/row_publisher.h"

namespace warren::outbox {

struct OutboxRelayOptions {
  std::string outbox;
  std::string default_exchange;
  int batch = 100;
  std::chrono::milliseconds poll_interval{1000};
  RetrySchedule schedule{10, std::chrono::seconds(1), std::chrono::minutes(5)};
  std::chrono::milliseconds stats_interval{5000};
  std::chrono::milliseconds store_retry_initial{500};
  std::chrono::milliseconds store_retry_max{30000};
  // How long a round may take before /healthz reports the relay stalled.
  std::chrono::milliseconds loop_allowance{60000};
  // Sent rows older than this (by published_at) are deleted by lane 0, `prune_chunk` rows a
  // transaction, every prune_interval (zero: retention / 2, between 1 s and 1 h).
  std::chrono::milliseconds sent_retention{std::chrono::hours(24 * 7)};
  std::chrono::milliseconds prune_interval{0};
  int prune_chunk = 1000;
};

class OutboxRelay {
 public:
  // One store per lane. `publisher` outlives the relay; metrics and health may be null.
  OutboxRelay(OutboxRelayOptions options, std::vector<std::unique_ptr<OutboxStore>> lanes,
              RowPublisher& publisher, observability::Metrics* metrics,
              observability::Health* health);
  ~OutboxRelay();  // stop()s
  OutboxRelay(const OutboxRelay&) = delete;
  OutboxRelay& operator=(const OutboxRelay&) = delete;

  void start();
  // Asks the lanes to stop after their round in progress; returns at once.
  void request_stop();
  // request_stop(), then waits for the rounds in progress (their publishes wait at most
  // publish_timeout) and joins.
  void stop();

 private:
  void run_lane(std::size_t index);
  void refresh_stats(OutboxStore& store);
  // Deletes sent rows past the retention, a chunk a transaction, until a chunk comes back short.
  void prune_sent(OutboxStore& store, observability::LoopHeartbeat* heartbeat);
  void sleep_or_wake(std::chrono::milliseconds duration) const;

  const OutboxRelayOptions options_;
  std::vector<std::unique_ptr<OutboxStore>> stores_;
  RowPublisher& publisher_;
  observability::Metrics* metrics_;
  observability::Health* health_;
  int wake_fd_ = -1;  // eventfd: readable once stop() was called
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace warren::outbox
