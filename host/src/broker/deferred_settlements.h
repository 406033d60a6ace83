// Settlements the consuming connection's I/O thread holds back until a time: the requeue of a
// message whose retry or dead letter could not be published, sent after a backoff
// (rabbitmq_transport.h) so that a broken route does not bring it straight back to the handler.
// Pure bookkeeping (no rabbitmq-c), for the I/O thread only.
//
// Why the I/O thread holds them, and not a handler thread that sleeps: a sleeping handler thread
// would stop its worker while a route is broken, and a thread per waiting message would be
// unbounded. Here the message only stays unacked: it keeps its slot of the worker's prefetch, so
// the broker sends no more than prefetch messages to a worker whose messages all wait (the
// backoff throttles the worker, and nothing else). The wait is bounded by the broker reconnect
// backoff's maximum, far below the broker's consumer_timeout (30 min by default). If the channel
// goes meanwhile, the broker requeues the message itself and the held settlement turns stale.
#pragma once

#include <chrono>
#include <vector>

#include "broker/ack_ledger.h"

namespace warren::broker {

class DeferredSettlements {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    DeliveryToken token;
    SettleAction action = SettleAction::requeue;
    Clock::time_point due;
  };

  void add(Entry entry) { held_.push_back(entry); }
  // Those due at `now` (due no later), oldest due first; the rest stay.
  std::vector<Entry> take_due(Clock::time_point now);
  // Everything, due or not (closing: the requeues go out before the channels close).
  std::vector<Entry> take_all();

  std::size_t size() const noexcept { return held_.size(); }

 private:
  std::vector<Entry> held_;
};

}  // namespace warren::broker
