// The transport seam: what the runtime needs from a message broker, and nothing of how.
//
// Implementations: the in-memory transport (tests, demos) and RabbitMQ (broker/). The planned
// table-as-queue transports (SQLite, PostgreSQL) implement the same interface. The runtime
// decides *what* happens to a message (ack, retry later, dead-letter); the transport decides
// *how* (a basic.ack, a publish into delay levels, an UPDATE of a row).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warren::runtime {

// Headers rendered as text, as plugins see them. Order is the broker's.
using TextHeaders = std::vector<std::pair<std::string, std::string>>;

std::optional<std::string_view> find_header(const TextHeaders& headers, std::string_view name);

struct InboundMessage {
  std::string queue;
  std::string exchange;
  std::string routing_key;
  std::string message_id;
  std::string content_type;
  std::string body;
  TextHeaders headers;
  std::uint32_t attempt = 1;  // from x-warren-attempt; 1 when absent
  bool redelivered = false;
};

struct OutboundMessage {
  std::string exchange;
  std::string routing_key;
  std::string body;
  std::string content_type;  // empty: application/octet-stream
  std::string message_id;    // empty: generated
  TextHeaders headers;
  bool persistent = true;
  bool mandatory = true;
};

// Replaces the value of header `name`, or appends it.
void set_header(TextHeaders& headers, std::string_view name, std::string value);
// Appends header `name` unless the headers already hold it.
void set_header_if_absent(TextHeaders& headers, std::string_view name, std::string value);

// A copy of `original` to publish again (a retry, a dead letter, a replay): its body, content
// type, message id and headers, minus the headers `drop_header` names. Where it goes (exchange,
// routing key) and what headers it gains are the caller's.
OutboundMessage republished_copy(const InboundMessage& original,
                                 bool (*drop_header)(std::string_view name));

// What the runtime decided about one delivery.
struct Settlement {
  enum class Kind {
    ack,          // done
    requeue,      // give it back now, unchanged (shutdown, stale handler)
    retry_later,  // redeliver after `delay` with attempt = next_attempt
    dead_letter,  // to the worker's dead-letter exchange, with the reason
  };
  Kind kind = Kind::ack;
  std::chrono::milliseconds delay{0};
  std::uint32_t next_attempt = 0;
  std::string reason;         // dead_letter: "type: what" (x-warren-error)
  std::string worker;         // x-warren-worker
  std::uint32_t attempt = 1;  // the attempt that produced this settlement
  // Headers a republished copy (retry_later, dead_letter) carries when the message lacks them:
  // the trace context the host generated for a message that came without one.
  TextHeaders headers_if_absent;

  static Settlement ack() { return Settlement{}; }
  static Settlement requeue() {
    Settlement s;
    s.kind = Kind::requeue;
    return s;
  }
};

const char* to_string(Settlement::Kind kind) noexcept;

// One message handed to the runtime. settle() is called exactly once, from any thread.
class Delivery {
 public:
  virtual ~Delivery() = default;
  virtual const InboundMessage& message() const noexcept = 0;
  // True when the channel it came on is gone (reconnect): the broker will redeliver it, so the
  // runtime skips the handler and settle() drops the settlement.
  virtual bool stale() const noexcept { return false; }
  // May block until the transport has done it (e.g. a confirmed publish for retry_later).
  // Throws TransportError when it could not be done; the message then stays unacked and the
  // broker redelivers it.
  virtual void settle(const Settlement& settlement) = 0;
};

// Where a transport sends the deliveries of one subscription. deliver() may block while the
// consumer is full (the in-memory transport's FullMode.Wait); a broker never sends more than
// `prefetch` unsettled deliveries, so it never blocks there.
class DeliverySink {
 public:
  virtual ~DeliverySink() = default;
  virtual void deliver(std::unique_ptr<Delivery> delivery) = 0;
};

struct Subscription {
  std::string worker;
  std::string queue;
  std::uint16_t prefetch = 20;
  DeliverySink* sink = nullptr;      // outlives the transport's consuming
  std::string dead_letter_exchange;  // where dead_letter settlements go ("" : the queue's DLX)
};

class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
  // After every delivery is settled: makes sure the settlements reached the broker, closes.
  virtual void close() = 0;
  // Connected and every subscription is consuming.
  virtual bool ready() const noexcept = 0;
};

}  // namespace warren::runtime
