// Declares the config's topology on a channel, idempotently: exchanges, queues (with the
// arguments their keys stand for), bindings, each worker's dead-letter queue, the retry delay
// levels and the delivery bindings of the workers' queues. A queue a worker consumes but the
// config does not declare is only checked (passive declare).
//
// Run at start, after every reconnect, and by `warren topology apply`. A conflict with what
// exists is a TopologyError naming the queue or exchange, the argument and both values.
//
// The consuming connection declares in two parts: what every worker shares (declare_shared: a
// refusal there stops the whole connection), then each worker's own queue (prepare_consumed: a
// refusal, such as an externally managed queue that was deleted, stops that worker alone).
//
// After a reconnect it consumes first and declares afterwards, on a connection of its own
// (declare_again, topology_refresher.h): on a cluster with a frozen member, a declaration waits
// for that member (issue 21).
#pragma once

#include <amqp.h>

#include <map>
#include <string>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/amqp_errors.h"
#include "config/config.h"

namespace warren::broker {

class TopologyDeclarer {
 public:
  explicit TopologyDeclarer(const config::Config& config) : config_(config) {}

  // Config queue name -> the name on the broker (differs only for server-named queues).
  using QueueNames = std::map<std::string, std::string>;

  // Everything, on `channel` (opened by the caller): declare_shared(), then prepare_consumed()
  // for each of `consumed_queues` (the queues workers consume). Throws TopologyError (MissingQueue
  // for a consumed queue that neither exists nor is declared) or ConnectionLost.
  QueueNames declare(AmqpConnection& connection, amqp_channel_t channel,
                     const std::vector<std::string>& consumed_queues) const;

  // Exchanges, the config's queues and bindings, the workers' dead-letter queues, the delay
  // levels. Throws TopologyError or ConnectionLost.
  QueueNames declare_shared(AmqpConnection& connection, amqp_channel_t channel) const;

  // Makes the queue `queue` ready for `worker` to consume, and returns its name on the broker: a
  // queue the config declares is declared (again: a deleted one comes back) unless `declared`
  // (what declare_shared() returned on this connection) already names it; any other queue is
  // checked with a passive declare, MissingQueue when it does not exist. Then its binding to the
  // delay levels' delivery exchange. Throws TopologyError or ConnectionLost; a TopologyError
  // means the broker closed `channel` (or the connection).
  std::string prepare_consumed(AmqpConnection& connection, amqp_channel_t channel,
                               const std::string& queue, const std::string& worker,
                               const QueueNames& declared) const;

  // declare_shared() and the delivery binding of each of `consumed` (names on the broker), but
  // for the queues that belong to one connection (exclusive or server-named): the consuming
  // connection declares those itself. For declaring everything again, behind consuming, after a
  // reconnect. Throws TopologyError or ConnectionLost.
  void declare_again(AmqpConnection& connection, amqp_channel_t channel,
                     const std::vector<std::string>& consumed) const;

  // What a retry needs to come back, declared again: the delay levels, and the delivery binding
  // of each of `queues` (names on the broker). For repairing them while running, when a retry
  // publish is returned unroutable (someone deleted or unbound part of them). Throws
  // TopologyError (the broker closed `channel`) or ConnectionLost.
  void declare_retry_routes(AmqpConnection& connection, amqp_channel_t channel,
                            const std::vector<std::string>& queues) const;

  // A human summary of what declare() would do (for `warren topology apply --dry-run`).
  std::vector<std::string> describe() const;

 private:
  QueueNames declare_all(AmqpConnection& connection, amqp_channel_t channel,
                         bool connection_owned_too) const;
  void declare_exchange(AmqpConnection& connection, amqp_channel_t channel,
                        const config::ExchangeConfig& exchange) const;
  std::string declare_queue(AmqpConnection& connection, amqp_channel_t channel,
                            const config::QueueConfig& queue) const;
  void declare_delay_levels(AmqpConnection& connection, amqp_channel_t channel) const;
  void check_queue_exists(AmqpConnection& connection, amqp_channel_t channel,
                          const std::string& queue, const std::string& worker) const;

  const config::Config& config_;
};

// Whether `queue` belongs to the connection that declares it (exclusive, or server-named): it is
// gone with that connection, and only that connection may declare or consume it.
bool owned_by_connection(const config::QueueConfig& queue);

// A worker's queue that the config does not declare is not on the broker (never created, or
// deleted by whoever manages it).
class MissingQueue : public TopologyError {
 public:
  using TopologyError::TopologyError;
};

// The x-arguments a [[queues]] entry stands for (x-queue-type, dead-lettering, delivery limit,
// TTL, length, overflow, then its free-form arguments).
config::Arguments queue_arguments(const config::QueueConfig& queue);

// Throws TopologyError or ConnectionLost for a failed synchronous method `what`.
[[noreturn]] void throw_declare_error(const amqp_rpc_reply_t& reply, const std::string& what);

}  // namespace warren::broker
