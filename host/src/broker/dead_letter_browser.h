// Reads a dead-letter queue for `warren dlq`: takes every message currently in it, holding
// them unacked so nothing is lost if the tool dies, then acks the ones it moved or deleted and
// lets the broker requeue the rest when the channel closes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
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

  // Up to `max` messages, stopping when `message_count()` were read or nothing arrives for
  // `idle`. They stay unacked until ack() or the browser is destroyed (then requeued).
  std::vector<DeadLetter> fetch(std::size_t max, std::chrono::milliseconds idle);

  void ack(std::uint64_t tag);
  // Deletes every ready message of the queue (queue.purge); returns how many.
  std::uint64_t purge_all();

 private:
  std::unique_ptr<AmqpConnection> connection_;
  std::string queue_;
  std::uint64_t message_count_ = 0;
  bool consuming_ = false;
  bool acked_any_ = false;
};

}  // namespace warren::broker
