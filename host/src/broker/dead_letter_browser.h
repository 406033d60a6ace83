// Reads a dead-letter queue for `warren dlq`, one letter at a time (basic.get): it holds what it
// read unacked, so nothing is lost if the tool dies, and the caller acks each letter once it was
// moved, deleted or copied to the tail (rabbitmq_dead_letters.h); whatever is still unacked goes
// back to the queue when the channel closes.
//
// basic.get rather than a consumer: the broker hands out exactly the letters asked for, none
// ahead in a prefetch window. Every letter handed out and then returned counts as a delivery on a
// quorum queue, and a delivery limit (a policy can set one) drops the letter once reached; so the
// browser must never receive a letter its caller does not settle. A `peek --limit 3` reads three
// letters (plus those --where skips), not the queue.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/amqp_connection.h"
#include "config/config.h"
#include "transport/transport.h"

namespace warren::broker {

struct DeadLetter {
  std::uint64_t tag = 0;
  transport::InboundMessage
      message;  // exchange/routing_key as delivered from the dead-letter queue
};

class DeadLetterBrowser {
 public:
  // Connects (hosts tried in turn). Throws ConnectionLost, or TopologyError when the queue does
  // not exist.
  DeadLetterBrowser(const config::Config& config, std::string queue);
  ~DeadLetterBrowser();

  // Messages in the queue when it was opened (ready ones; unacked elsewhere are not counted).
  std::uint64_t message_count() const noexcept { return message_count_; }

  // The next letter, or nullopt once `message_count()` were read or the queue is empty: the
  // letters that were there at opening, not the copies a caller puts at the tail meanwhile. It
  // stays unacked until ack() or the browser is destroyed (then requeued).
  std::optional<DeadLetter> next();
  // Up to `max` letters through next().
  std::vector<DeadLetter> fetch(std::size_t max);

  void ack(std::uint64_t tag);
  // Deletes every ready message of the queue (queue.purge); returns how many.
  std::uint64_t purge_all();

 private:
  std::unique_ptr<AmqpConnection> connection_;
  std::string queue_;
  std::uint64_t message_count_ = 0;
  std::uint64_t read_ = 0;
  bool acked_any_ = false;
};

}  // namespace warren::broker
