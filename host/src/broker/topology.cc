// See topology.h.
#include "broker/topology.h"

#include <amqp_framing.h>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/delay_levels.h"

namespace warren::broker {
namespace {

constexpr std::int64_t kDefaultQuorumDeliveryLimit = 20;

const char* exchange_type_name(config::ExchangeType type) {
  switch (type) {
    case config::ExchangeType::direct:
      return "direct";
    case config::ExchangeType::fanout:
      return "fanout";
    case config::ExchangeType::topic:
      return "topic";
    case config::ExchangeType::headers:
      return "headers";
  }
  return "topic";
}

void bind_queue(AmqpConnection& connection, amqp_channel_t channel, const std::string& queue,
                const std::string& exchange, const std::string& routing_key,
                const config::Arguments& arguments) {
  AmqpTableBuilder table;
  table.add_all(arguments);
  amqp_queue_bind(connection.state(), channel, bytes_of(queue), bytes_of(exchange),
                  bytes_of(routing_key), table.table());
  const auto reply = connection.last_reply();
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    throw_declare_error(reply, "binding queue '" + queue + "' to exchange '" + exchange +
                                   "' with routing key '" + routing_key + "'");
  }
}

// The binding that brings a queue's retries back from the delay levels.
void bind_delivery(AmqpConnection& connection, amqp_channel_t channel, const std::string& queue) {
  bind_queue(connection, channel, queue, std::string(kDelayDeliveryExchange),
             delay_delivery_pattern(queue), {});
}

// The routing key that catches every dead letter on an exchange of this type.
std::string catch_all_key(const config::Config& config, const std::string& exchange,
                          const std::string& dead_letter_routing_key) {
  const config::ExchangeConfig* spec = config.find_exchange(exchange);
  if (spec == nullptr)
    return "#";
  switch (spec->type) {
    case config::ExchangeType::topic:
      return "#";
    case config::ExchangeType::direct:
      return dead_letter_routing_key;
    case config::ExchangeType::fanout:
    case config::ExchangeType::headers:
      return "";
  }
  return "#";
}

// The (first) worker that consumes `queue`, to name in errors.
std::string worker_consuming(const config::Config& config, const std::string& queue) {
  for (const auto& worker : config.workers) {
    if (worker.queue == queue)
      return worker.name;
  }
  return {};
}

}  // namespace

[[noreturn]] void throw_declare_error(const amqp_rpc_reply_t& reply, const std::string& what) {
  const int code = server_reply_code(reply);
  std::string text = reply_text(reply);
  if (code == AMQP_PRECONDITION_FAILED) {
    const auto dash = text.find(" - ");
    throw TopologyError(what + " failed: " +
                        explain_precondition_failed(dash == std::string::npos
                                                        ? std::string_view(text)
                                                        : std::string_view(text).substr(dash + 3)));
  }
  if (code == AMQP_NOT_FOUND || code == AMQP_ACCESS_REFUSED || code == AMQP_RESOURCE_LOCKED ||
      code == AMQP_NOT_ALLOWED) {
    throw TopologyError(what + " failed: " + text);
  }
  throw ConnectionLost(what + " failed: " + text);
}

config::Arguments queue_arguments(const config::QueueConfig& queue) {
  config::Arguments arguments;
  const bool quorum = queue.type == config::QueueType::quorum;
  if (quorum)
    arguments["x-queue-type"] = std::string("quorum");
  if (!queue.dead_letter_exchange.empty()) {
    arguments["x-dead-letter-exchange"] = queue.dead_letter_exchange;
  }
  if (!queue.dead_letter_routing_key.empty()) {
    arguments["x-dead-letter-routing-key"] = queue.dead_letter_routing_key;
  }
  // RabbitMQ 3.x quorum queues have no default delivery limit; Warren sets one so that a message
  // that crashes its consumer again and again ends in the dead-letter exchange. Without a
  // dead-letter exchange the limit would only drop messages (a dead-letter queue browsed by
  // `warren dlq` many times, say), so then only an explicit limit applies.
  if (queue.delivery_limit) {
    arguments["x-delivery-limit"] = *queue.delivery_limit;
  } else if (quorum && !queue.dead_letter_exchange.empty()) {
    arguments["x-delivery-limit"] = kDefaultQuorumDeliveryLimit;
  }
  if (!queue.dead_letter_strategy.empty()) {
    arguments["x-dead-letter-strategy"] = queue.dead_letter_strategy;
  }
  if (queue.message_ttl) {
    arguments["x-message-ttl"] = static_cast<std::int64_t>(queue.message_ttl->count());
  }
  if (queue.max_length)
    arguments["x-max-length"] = *queue.max_length;
  if (!queue.overflow.empty())
    arguments["x-overflow"] = queue.overflow;
  for (const auto& [key, value] : queue.arguments)
    arguments[key] = value;
  return arguments;
}

void TopologyDeclarer::declare_exchange(AmqpConnection& connection, amqp_channel_t channel,
                                        const config::ExchangeConfig& exchange) const {
  AmqpTableBuilder arguments;
  arguments.add_all(exchange.arguments);
  amqp_exchange_declare(connection.state(), channel, bytes_of(exchange.name),
                        amqp_cstring_bytes(exchange_type_name(exchange.type)), 0,
                        exchange.durable ? 1 : 0, exchange.auto_delete ? 1 : 0, 0,
                        arguments.table());
  const auto reply = connection.last_reply();
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    throw_declare_error(reply, "declaring exchange '" + exchange.name + "'");
  }
}

std::string TopologyDeclarer::declare_queue(AmqpConnection& connection, amqp_channel_t channel,
                                            const config::QueueConfig& queue) const {
  AmqpTableBuilder arguments;
  arguments.add_all(queue_arguments(queue));
  const std::string requested_name = queue.server_named ? std::string() : queue.name;
  amqp_queue_declare_ok_t* ok = amqp_queue_declare(
      connection.state(), channel, bytes_of(requested_name), 0, queue.durable ? 1 : 0,
      queue.exclusive ? 1 : 0, queue.auto_delete ? 1 : 0, arguments.table());
  const auto reply = connection.last_reply();
  if (ok == nullptr || reply.reply_type != AMQP_RESPONSE_NORMAL) {
    throw_declare_error(reply, "declaring queue '" + queue.name + "'");
  }
  const std::string actual = string_of(ok->queue);
  for (const auto& binding : queue.bindings) {
    bind_queue(connection, channel, actual, binding.exchange, binding.routing_key,
               binding.arguments);
  }
  return actual;
}

void TopologyDeclarer::check_queue_exists(AmqpConnection& connection, amqp_channel_t channel,
                                          const std::string& queue,
                                          const std::string& worker) const {
  amqp_queue_declare(connection.state(), channel, bytes_of(queue), 1, 0, 0, 0, amqp_empty_table);
  const auto reply = connection.last_reply();
  if (reply.reply_type == AMQP_RESPONSE_NORMAL)
    return;
  if (server_reply_code(reply) == AMQP_NOT_FOUND) {
    throw MissingQueue("queue '" + queue + "' consumed by worker '" + worker +
                       "' does not exist, and the config does not declare it: declare it in "
                       "[[queues]] or create it on the broker");
  }
  throw_declare_error(reply, "checking queue '" + queue + "'");
}

void TopologyDeclarer::declare_delay_levels(AmqpConnection& connection,
                                            amqp_channel_t channel) const {
  config::ExchangeConfig delivery;
  delivery.name = std::string(kDelayDeliveryExchange);
  delivery.type = config::ExchangeType::topic;
  declare_exchange(connection, channel, delivery);
  for (int level = 0; level < kDelayLevels; ++level) {
    const std::string name = delay_level_name(level);
    config::ExchangeConfig exchange;
    exchange.name = name;
    exchange.type = config::ExchangeType::topic;
    declare_exchange(connection, channel, exchange);

    config::QueueConfig queue;
    queue.name = name;
    queue.type = config::QueueType::quorum;
    queue.dead_letter_exchange =
        level == 0 ? std::string(kDelayDeliveryExchange) : delay_level_name(level - 1);
    queue.dead_letter_strategy = "at-least-once";
    queue.overflow = "reject-publish";
    queue.message_ttl = kDelayUnit * (std::int64_t{1} << level);
    declare_queue(connection, channel, queue);
    bind_queue(connection, channel, name, name, delay_bit_pattern(level, true), {});

    // A clear bit skips to the next level down (an exchange-to-exchange binding).
    const std::string next =
        level == 0 ? std::string(kDelayDeliveryExchange) : delay_level_name(level - 1);
    amqp_exchange_bind(connection.state(), channel, bytes_of(next), bytes_of(name),
                       bytes_of(delay_bit_pattern(level, false)), amqp_empty_table);
    const auto reply = connection.last_reply();
    if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
      throw_declare_error(reply, "binding delay exchange '" + name + "' to '" + next + "'");
    }
  }
}

TopologyDeclarer::QueueNames TopologyDeclarer::declare(
    AmqpConnection& connection, amqp_channel_t channel,
    const std::vector<std::string>& consumed_queues) const {
  QueueNames names = declare_shared(connection, channel);
  for (const auto& queue : consumed_queues) {
    names[queue] =
        prepare_consumed(connection, channel, queue, worker_consuming(config_, queue), names);
  }
  return names;
}

bool owned_by_connection(const config::QueueConfig& queue) {
  return queue.exclusive || queue.server_named;
}

TopologyDeclarer::QueueNames TopologyDeclarer::declare_shared(AmqpConnection& connection,
                                                              amqp_channel_t channel) const {
  return declare_all(connection, channel, true);
}

void TopologyDeclarer::declare_again(AmqpConnection& connection, amqp_channel_t channel,
                                     const std::vector<std::string>& consumed) const {
  declare_all(connection, channel, false);
  for (const auto& queue : consumed)
    bind_delivery(connection, channel, queue);
}

TopologyDeclarer::QueueNames TopologyDeclarer::declare_all(AmqpConnection& connection,
                                                           amqp_channel_t channel,
                                                           bool connection_owned_too) const {
  QueueNames names;
  for (const auto& exchange : config_.exchanges)
    declare_exchange(connection, channel, exchange);
  for (const auto& queue : config_.queues) {
    if (connection_owned_too || !owned_by_connection(queue))
      names[queue.name] = declare_queue(connection, channel, queue);
  }
  for (const auto& worker : config_.workers) {
    if (!worker.dead_letter_queue.empty() && !names.contains(worker.dead_letter_queue)) {
      const config::QueueConfig* source = config_.find_queue(worker.queue);
      const std::string exchange = !worker.dead_letter_exchange.empty()
                                       ? worker.dead_letter_exchange
                                       : (source != nullptr ? source->dead_letter_exchange : "");
      config::QueueConfig dead;
      dead.name = worker.dead_letter_queue;
      dead.type = config::QueueType::quorum;
      dead.allow_message_loss = true;
      const std::string key = catch_all_key(
          config_, exchange, source != nullptr ? source->dead_letter_routing_key : "");
      dead.bindings.push_back({exchange, key, {}});
      names[dead.name] = declare_queue(connection, channel, dead);
    }
  }
  declare_delay_levels(connection, channel);
  return names;
}

std::string TopologyDeclarer::prepare_consumed(AmqpConnection& connection, amqp_channel_t channel,
                                               const std::string& queue, const std::string& worker,
                                               const QueueNames& declared) const {
  std::string actual = queue;
  if (const auto it = declared.find(queue); it != declared.end()) {
    actual = it->second;
  } else if (const config::QueueConfig* spec = config_.find_queue(queue)) {
    actual = declare_queue(connection, channel, *spec);
  } else {
    check_queue_exists(connection, channel, queue, worker);
  }
  bind_delivery(connection, channel, actual);
  return actual;
}

void TopologyDeclarer::declare_retry_routes(AmqpConnection& connection, amqp_channel_t channel,
                                            const std::vector<std::string>& queues) const {
  declare_delay_levels(connection, channel);
  for (const auto& queue : queues)
    bind_delivery(connection, channel, queue);
}

std::vector<std::string> TopologyDeclarer::describe() const {
  std::vector<std::string> lines;
  for (const auto& exchange : config_.exchanges) {
    lines.push_back("exchange " + exchange.name + " (" + exchange_type_name(exchange.type) +
                    (exchange.durable ? ", durable" : "") + ")");
  }
  for (const auto& queue : config_.queues) {
    std::string line = "queue " + queue.name + " (" +
                       (queue.type == config::QueueType::quorum ? "quorum" : "classic") + ")";
    for (const auto& binding : queue.bindings) {
      line += "\n  bound to " + binding.exchange + " with '" + binding.routing_key + "'";
    }
    lines.push_back(line);
  }
  for (const auto& worker : config_.workers) {
    if (!worker.dead_letter_queue.empty() &&
        config_.find_queue(worker.dead_letter_queue) == nullptr) {
      lines.push_back("queue " + worker.dead_letter_queue + " (quorum; dead letters of worker " +
                      worker.name + ")");
    }
  }
  lines.push_back("retry delay levels warren.delay.0 .. warren.delay." +
                  std::to_string(kDelayLevels - 1) + " and exchange " +
                  std::string(kDelayDeliveryExchange));
  return lines;
}

}  // namespace warren::broker
