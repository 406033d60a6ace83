// See rabbitmq_transport.h.
#include "broker/rabbitmq_transport.h"

#include "broker/amqp_table.h"
#include "broker/delay_levels.h"
#include "broker/wire_properties.h"
#include "observability/log.h"
#include "observability/timestamp.h"
#include "transport/failure_headers.h"

namespace warren::broker {

class RabbitMqTransport::Delivery final : public transport::Delivery {
 public:
  Delivery(RabbitMqTransport& transport, DeliveryToken token, transport::InboundMessage message,
           std::string broker_queue)
      : transport_(transport),
        token_(token),
        message_(std::move(message)),
        broker_queue_(std::move(broker_queue)) {}

  const transport::InboundMessage& message() const noexcept override { return message_; }
  bool stale() const noexcept override { return !transport_.consumer_->is_current(token_); }
  void settle(const transport::Settlement& settlement) override {
    transport_.settle(*this, settlement);
  }

  const DeliveryToken& token() const noexcept { return token_; }
  const std::string& broker_queue() const noexcept { return broker_queue_; }

 private:
  RabbitMqTransport& transport_;
  DeliveryToken token_;
  transport::InboundMessage message_;
  std::string broker_queue_;
};

ConnectionOptions connection_options(const config::BrokerConfig& broker, const std::string& role,
                                     const std::string& host_name) {
  ConnectionOptions options;
  options.heartbeat = broker.heartbeat;
  options.connect_timeout = broker.connect_timeout;
  options.tls = broker.tls;
  options.connection_name = "warren " + role + " (" + host_name + ")";
  return options;
}

IoLoopOptions io_loop_options(const config::Config& config, const std::string& role) {
  IoLoopOptions options;
  options.endpoints = resolve_endpoints(config.broker);
  options.connection = connection_options(config.broker, role, config.host.name);
  options.reconnect_initial = config.broker.reconnect_initial;
  options.reconnect_max = config.broker.reconnect_max;
  return options;
}

RabbitMqTransport::RabbitMqTransport(const config::Config& config, observability::Metrics* metrics,
                                     observability::Health* health)
    : config_(config), metrics_(metrics), health_(health) {
  PublisherOptions options{io_loop_options(config, "publisher")};
  options.publish_timeout = config.broker.publish_timeout;
  publisher_ = std::make_unique<PublisherConnection>(std::move(options), metrics, health);
}

RabbitMqTransport::~RabbitMqTransport() {
  consumer_.reset();
  publisher_.reset();
}

void RabbitMqTransport::start(const std::vector<transport::Subscription>& subscriptions) {
  subscriptions_ = subscriptions;
  ConsumerOptions options{io_loop_options(config_, "consumer")};
  consumer_ = std::make_unique<ConsumerConnection>(
      std::move(options), config_, subscriptions,
      [this](const DeliveryToken& token, transport::InboundMessage message,
             const std::string& queue) { on_delivery(token, std::move(message), queue); },
      metrics_, health_);
  consumer_->start();
}

void RabbitMqTransport::stop_consuming() {
  if (consumer_)
    consumer_->stop_consuming();
}

void RabbitMqTransport::close() {
  if (consumer_)
    consumer_->close();
  // Stopped, not destroyed: a handler still running past the shutdown timeout may yet publish or
  // settle, and then gets an error rather than a dangling pointer.
  publisher_->close();
}

bool RabbitMqTransport::ready() const noexcept {
  return consumer_ && consumer_->ready();
}

std::vector<std::string> RabbitMqTransport::not_ready_reasons() const {
  if (!consumer_)
    return {"not consuming yet"};
  return consumer_->not_ready_reasons();
}

void RabbitMqTransport::publish(const transport::OutboundMessage& message) {
  publisher_->publish(message);
}

void RabbitMqTransport::on_delivery(const DeliveryToken& token, transport::InboundMessage message,
                                    const std::string& queue) {
  transport::DeliverySink* sink = subscriptions_.at(token.subscription).sink;
  sink->deliver(std::make_unique<Delivery>(*this, token, std::move(message), queue));
}

void RabbitMqTransport::settle(const Delivery& delivery, const transport::Settlement& settlement) {
  switch (settlement.kind) {
    case transport::Settlement::Kind::ack:
      consumer_->settle(delivery.token(), SettleAction::ack);
      return;
    case transport::Settlement::Kind::requeue:
      consumer_->settle(delivery.token(), SettleAction::requeue);
      return;
    case transport::Settlement::Kind::retry_later:
      retry_later(delivery, settlement);
      return;
    case transport::Settlement::Kind::dead_letter:
      dead_letter(delivery, settlement);
      return;
  }
}

bool RabbitMqTransport::dropped_as_stale(const Delivery& delivery,
                                         const transport::Settlement& settlement,
                                         std::string_view what_is_skipped) {
  if (!delivery.stale())
    return false;
  // The broker put the message back when the connection went and sends it again: a retry or a
  // dead letter published for this copy as well would double its effect.
  const transport::InboundMessage& message = delivery.message();
  observability::log(observability::LogLevel::info,
                     {settlement.worker, message.message_id, settlement.attempt, {}},
                     "the connection this message came on was lost while its handler ran: " +
                         std::string(what_is_skipped) + "; the broker delivers it again");
  consumer_->settle(delivery.token(), SettleAction::requeue);  // dropped, counted as stale
  return true;
}

void RabbitMqTransport::retry_later(const Delivery& delivery,
                                    const transport::Settlement& settlement) {
  if (dropped_as_stale(delivery, settlement, "its retry is not scheduled"))
    return;
  const transport::InboundMessage& original = delivery.message();
  transport::OutboundMessage retry = transport::republished_copy(original, is_broker_death_header);
  retry.exchange = delay_entry_exchange();
  retry.routing_key = delay_routing_key(settlement.delay, delivery.broker_queue());
  suspend_expiration(retry);  // else it could leave its delay level early
  transport::add_retry_headers(retry.headers, original, settlement,
                               observability::utc_now_rfc3339());
  try {
    publisher_->publish(retry);
  } catch (const transport::PublishError& e) {
    consumer_->settle(delivery.token(), SettleAction::requeue);
    throw transport::TransportError(std::string("the retry could not be scheduled (") + e.what() +
                                    "); the message was requeued as it is");
  }
  consumer_->settle(delivery.token(), SettleAction::ack);
}

void RabbitMqTransport::dead_letter(const Delivery& delivery,
                                    const transport::Settlement& settlement) {
  if (dropped_as_stale(delivery, settlement, "its dead letter is not published"))
    return;
  const transport::InboundMessage& original = delivery.message();
  const config::QueueConfig* queue = config_.find_queue(original.queue);
  const auto& subscription = subscriptions_.at(delivery.token().subscription);
  const std::string exchange = !subscription.dead_letter_exchange.empty()
                                   ? subscription.dead_letter_exchange
                                   : (queue != nullptr ? queue->dead_letter_exchange : "");
  if (exchange.empty()) {
    observability::log(observability::LogLevel::warn,
                       observability::LogFields::for_worker(settlement.worker),
                       "queue '" + original.queue +
                           "' has no dead-letter exchange: the message is rejected and lost");
    consumer_->settle(delivery.token(), SettleAction::reject);
    return;
  }
  transport::OutboundMessage dead = transport::republished_copy(original, is_broker_death_header);
  dead.exchange = exchange;
  dead.routing_key = queue != nullptr && !queue->dead_letter_routing_key.empty()
                         ? queue->dead_letter_routing_key
                         : original.routing_key;
  suspend_expiration(dead);  // else it would vanish from the dead-letter queue
  transport::add_dead_letter_headers(dead.headers, original, settlement,
                                     observability::utc_now_rfc3339());
  try {
    publisher_->publish(dead);
  } catch (const transport::PublishError& e) {
    observability::log(observability::LogLevel::error,
                       observability::LogFields::for_worker(settlement.worker),
                       std::string("dead letter could not be published to '") + exchange + "' (" +
                           e.what() + "); rejecting it so the broker dead-letters it");
    consumer_->settle(delivery.token(), SettleAction::reject);
    return;
  }
  consumer_->settle(delivery.token(), SettleAction::ack);
}

}  // namespace warren::broker
