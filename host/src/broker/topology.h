// Declares the config's topology on a channel, idempotently: exchanges, queues (with the
// arguments their keys stand for), bindings, each worker's dead-letter queue, the retry delay
// levels and the delivery bindings of the workers' queues. A queue a worker consumes but the
// config does not declare is only checked (passive declare).
//
// Run at start, after every reconnect, and by `warren topology apply`. A conflict with what
// exists is a TopologyError naming the queue or exchange, the argument and both values.
#pragma once

#include <amqp.h>

#include <map>
#include <string>
#include <vector>

#include "broker/amqp_connection.h"
#include "config/config.h"

namespace warren::broker {

class TopologyDeclarer {
 public:
  explicit TopologyDeclarer(const config::Config& config) : config_(config) {}

  // Config queue name -> the name on the broker (differs only for server-named queues).
  using QueueNames = std::map<std::string, std::string>;

  // Everything, on `channel` (opened by the caller). Throws TopologyError or ConnectionLost.
  // `consumed_queues`: the queues workers consume (each gets its delay-delivery binding).
  QueueNames declare(AmqpConnection& connection, amqp_channel_t channel,
                     const std::vector<std::string>& consumed_queues) const;

  // A human summary of what declare() would do (for `warren topology apply --dry-run`).
  std::vector<std::string> describe() const;

 private:
  void declare_exchange(AmqpConnection& connection, amqp_channel_t channel,
                        const config::ExchangeConfig& exchange) const;
  std::string declare_queue(AmqpConnection& connection, amqp_channel_t channel,
                            const config::QueueConfig& queue) const;
  void declare_delay_levels(AmqpConnection& connection, amqp_channel_t channel) const;
  void check_queue_exists(AmqpConnection& connection, amqp_channel_t channel,
                          const std::string& queue, const std::string& worker) const;

  const config::Config& config_;
};

// The x-arguments a [[queues]] entry stands for (x-queue-type, dead-lettering, delivery limit,
// TTL, length, overflow, then its free-form arguments).
config::Arguments queue_arguments(const config::QueueConfig& queue);

// Throws TopologyError or ConnectionLost for a failed synchronous method `what`.
[[noreturn]] void throw_declare_error(const amqp_rpc_reply_t& reply, const std::string& what);

}  // namespace warren::broker
