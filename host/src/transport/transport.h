// The transport seam: what the runtime needs from a message broker, and nothing of how.
//
// Implementations: the in-memory transport (tests, demos) and RabbitMQ (broker/); the
// table-as-queue transports (SQLite, PostgreSQL) implement the same interface. The runtime
// decides *what* happens to a message (ack, retry later, dead-letter); the transport decides
// *how* (a basic.ack, a publish into delay levels, an UPDATE of a row). This library depends on
// the standard library only, so that every transport and the runtime can depend on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "transport/message.h"
#include "transport/settlement.h"

namespace warren::transport {

// One message handed to the runtime. settle() is called exactly once, from any thread.
class Delivery {
 public:
  virtual ~Delivery() = default;
  virtual const InboundMessage& message() const noexcept = 0;
  // True when the channel it came on is gone (reconnect): the broker will redeliver it, so the
  // runtime skips the handler and settle() drops the settlement.
  virtual bool stale() const noexcept { return false; }
  // May block until the transport has done it (e.g. a confirmed publish for retry_later).
  // Throws SettledOtherwise when it could not be done and the transport settled the message
  // another way (requeued it after a backoff, say); throws another TransportError when it could
  // not be done at all: the message then stays unacked and the broker redelivers it.
  virtual void settle(const Settlement& settlement) = 0;
  // settle(), from a settler that will settle another delivery at once (a dispatcher whose inbox
  // still holds deliveries): the transport may then leave its I/O thread asleep until its next
  // turn, at the latest its wake-up interval, rather than wake it for this one (issue 17: one
  // wake-up per burst of settlements, not one per message). Acks never cover more for it.
  virtual void settle_soon(const Settlement& settlement) { settle(settlement); }
};

// Where a transport sends the deliveries of one subscription. deliver() may block while the
// consumer is full (the in-memory transport's FullMode.Wait); a broker never sends more than
// `prefetch` unsettled deliveries, so it never blocks there.
class DeliverySink {
 public:
  virtual ~DeliverySink() = default;
  virtual void deliver(std::unique_ptr<Delivery> delivery) = 0;
  // Several at once, in order (a table queue's claim): a sink that queues them can take its lock
  // and wake its consumer once for all. Leaves `deliveries` empty.
  virtual void deliver_all(std::vector<std::unique_ptr<Delivery>>& deliveries) {
    for (auto& delivery : deliveries)
      deliver(std::move(delivery));
    deliveries.clear();
  }

  // The transport's reading thread may run handlers itself between its reads (issue 17: a
  // hand-over to another thread cost as much CPU as the handler and the broker's I/O together).
  // Called by a thread that calls help() next: the sink may queue `deliveries` without waking
  // its own threads, and says so (true). False: delivered as deliver_all() does (the default,
  // and a sink whose handlers run long: they would keep the reading thread from reading).
  virtual bool deliver_all_to_helper(std::vector<std::unique_ptr<Delivery>>& deliveries) {
    deliver_all(deliveries);
    return false;
  }
  // Counts the calling thread in as a helper, unless the sink is stopping (false: no help).
  // True: the sink outlives the help() call that must follow, whatever its owner does meanwhile
  // (a dispatcher's drain and destructor wait for it), so that the transport need not hold the
  // sink while the help runs handlers (broker/sink_access.h).
  virtual bool enlist_helper() { return false; }
  // After enlist_helper() returned true, and it ends that enlistment: runs queued deliveries'
  // handlers on the calling thread, within the sink's concurrency, until none is left or
  // `enough()` holds between two; then wakes the sink's own threads for what is left. Returns
  // how many it ran.
  virtual std::size_t help(const std::function<bool()>& /*enough*/) { return 0; }
  // Wakes the sink's own threads for whatever waits (the helping thread is held up).
  virtual void wake_takers() {}
};

struct Subscription {
  std::string worker;
  std::string queue;
  std::uint16_t prefetch = 20;
  DeliverySink* sink = nullptr;      // outlives the transport's consuming
  std::string dead_letter_exchange;  // where dead_letter settlements go ("" : the queue's DLX)
  // How many handlers settle its deliveries side by side (the worker's concurrency, or its
  // processes): how far ahead of the oldest unsettled delivery settlements may run.
  std::size_t settlers = 1;
};

class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by Delivery::settle when the settlement asked for could not be done (its publish failed)
// and the transport did `instead` (requeue: the message comes back as it was, usually after a
// backoff; dead_letter: the broker dead-letters it). what() says what happened and why, for the
// log line.
class SettledOtherwise : public TransportError {
 public:
  SettledOtherwise(Settlement::Kind instead, const std::string& what)
      : TransportError(what), instead_(instead) {}
  Settlement::Kind instead() const noexcept { return instead_; }

 private:
  Settlement::Kind instead_;
};

// Thrown by publish: the broker nacked or returned the message, or the deadline passed.
class PublishError : public TransportError {
 public:
  enum class Reason { nacked, returned, timeout, unavailable };
  PublishError(Reason reason, const std::string& what) : TransportError(what), reason_(reason) {}
  Reason reason() const noexcept { return reason_; }

 private:
  Reason reason_;
};

class Publisher {
 public:
  virtual ~Publisher() = default;
  // Returns once the broker confirmed the message; throws PublishError otherwise.
  virtual void publish(const OutboundMessage& message) = 0;
};

class Transport : public Publisher {
 public:
  // Declares topology, subscribes, and starts delivering. Throws TransportError when the
  // topology cannot be declared (a conflict is not retried).
  virtual void start(const std::vector<Subscription>& subscriptions) = 0;
  // Stops new deliveries (basic.cancel); deliveries already handed over still get settled.
  virtual void stop_consuming() = 0;
  // The same for one subscription (a worker a reload removes or replaces): once this returns,
  // nothing more is delivered to it, it is never subscribed again (not after a reconnect either)
  // and readiness no longer waits for it. Its deliveries already handed over still get settled.
  virtual void stop_consuming(const std::string& worker) = 0;
  // After every delivery is settled: makes sure the settlements reached the broker, closes.
  virtual void close() = 0;
  // Connected and every subscription is consuming.
  virtual bool ready() const noexcept = 0;
  // Why it is not ready, a line each for /readyz (a worker whose queue is missing, say); empty
  // when ready or when the transport cannot say more than ready().
  virtual std::vector<std::string> not_ready_reasons() const { return {}; }
};

}  // namespace warren::transport
