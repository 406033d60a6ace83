// One worker's subscription on the consuming connection, as the I/O thread keeps it: whether its
// channel is open, its consumer tag while it consumes, and while it does not, why (for /readyz)
// and when to try again. Pure bookkeeping (no rabbitmq-c), so it is unit-tested alone.
//
// Each worker has a backoff of its own: a worker whose queue is missing (an externally managed
// queue that was deleted) is retried alone, and neither stops nor slows the other workers. Its
// reason is logged once: the same failure again only schedules the next attempt (a queue missing
// for an hour logs one line, not one per attempt); a new reason is logged, and so is the recovery.
#pragma once

#include <chrono>
#include <string>

#include "transport/backoff.h"
#include "transport/transport.h"

namespace warren::broker {

class SubscriberState {
 public:
  using Clock = std::chrono::steady_clock;

  // `retry`: the waits between failed attempts to consume (the broker reconnect policy).
  SubscriberState(transport::Subscription subscription, transport::BackoffPolicy retry);

  const transport::Subscription& subscription() const noexcept { return subscription_; }
  const std::string& worker() const noexcept { return subscription_.worker; }
  // The queue's name on the broker (the config's, but for a server-named queue).
  const std::string& queue() const noexcept { return queue_; }
  void set_queue(std::string name) { queue_ = std::move(name); }

  // The worker's channel is open on the current connection.
  bool channel_open = false;
  // The config declares the queue server-named: a new name each declaration, and it belongs to
  // the connection (exclusive, in practice).
  bool server_named = false;
  // stop_consuming(worker) ran (a reload removed or replaced the worker): never subscribed again,
  // and readiness no longer waits for it. Its channel stays open for the settlements still due.
  bool retired = false;

  bool consuming() const noexcept { return !consumer_tag_.empty(); }
  const std::string& consumer_tag() const noexcept { return consumer_tag_; }

  // Consuming as `tag`: the backoff starts over. True when it had been reported not consuming
  // (log that it consumes again).
  bool consuming_as(std::string tag);
  // Not consuming for no fault of its own (the connection went, or stop_consuming()): the
  // reason reported so far stays, so that the same failure after a reconnect is not logged again.
  void stopped() noexcept { consumer_tag_.clear(); }
  // The broker ended the consumer (basic.cancel: its queue deleted, or a failover), and the
  // caller logged why: try again at `retry_at`.
  void interrupted(std::string reason, Clock::time_point retry_at);
  // An attempt to consume failed, or the broker closed the channel, for `reason`: the next
  // attempt after the backoff. True when `reason` is not the one last reported (log it).
  bool failed(std::string reason, Clock::time_point now, double random01);

  // Not consuming, and the time for the next attempt has come.
  bool due(Clock::time_point now) const noexcept {
    return !retired && !consuming() && retry_at_ <= now;
  }
  Clock::time_point retry_at() const noexcept { return retry_at_; }
  // Why it does not consume: "" while it does, or before anything went wrong.
  const std::string& reason() const noexcept { return reason_; }

 private:
  transport::Subscription subscription_;
  std::string queue_;
  std::string consumer_tag_;  // empty while not consuming
  std::string reason_;        // reported (logged) and shown by /readyz
  transport::Backoff backoff_;
  Clock::time_point retry_at_{};
};

}  // namespace warren::broker
