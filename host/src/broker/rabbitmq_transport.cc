// See rabbitmq_transport.h.
#include "broker/rabbitmq_transport.h"

#include <algorithm>

#include "broker/amqp_table.h"
#include "broker/delay_levels.h"
#include "broker/wire_properties.h"
#include "observability/log.h"
#include "observability/timestamp.h"
#include "transport/failure_headers.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

// A publish error that a declaration may cure: the broker returned the message unroutable (a
// binding gone) or refused it (an exchange gone).
bool route_broken(const transport::PublishError& error) {
  return error.reason() == transport::PublishError::Reason::returned ||
         error.reason() == transport::PublishError::Reason::nacked;
}

}  // namespace

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
  void settle_soon(const transport::Settlement& settlement) override {
    transport_.settle(*this, settlement, /*wake=*/false);
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
  // A requeue waits at most a quarter of the broker's consumer_timeout, which would close the
  // worker's channel over a delivery held unacked longer.
  requeue_backoff_ = std::make_unique<RequeueBackoff>(
      subscriptions.size(),
      transport::reconnect_policy(config_.broker.reconnect_initial, config_.broker.reconnect_max),
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.broker.consumer_timeout / 4));
  ConsumerOptions options{io_loop_options(config_, "consumer")};
  consumer_ = std::make_unique<ConsumerConnection>(
      std::move(options), config_, subscriptions,
      [this](const DeliveryToken& token, transport::InboundMessage message,
             const std::string& queue) { on_delivery(token, std::move(message), queue); },
      metrics_, health_);
  unhanded_ = std::vector<std::vector<std::unique_ptr<transport::Delivery>>>(subscriptions.size());
  sinks_.reset(subscriptions);
  consumer_->on_read_pass_end([this] { hand_over(); });
  consumer_->set_helper(this);
  consumer_->start();
}

void RabbitMqTransport::stop_consuming() {
  if (!consumer_)
    return;
  consumer_->stop_consuming();
  sinks_.retire([](std::size_t) { return true; });
}

void RabbitMqTransport::stop_consuming(const std::string& worker) {
  if (!consumer_)
    return;
  consumer_->stop_consuming(worker);
  // Deliveries the broker sent before it saw the cancel may still be read: they go back to the
  // queue (hand_over()), not to a sink its owner may destroy once this returns.
  sinks_.retire([&](std::size_t index) { return subscriptions_[index].worker == worker; });
}

void RabbitMqTransport::set_credentials(const std::string& user, const std::string& password) {
  publisher_->set_credentials(user, password);
  if (consumer_)
    consumer_->set_credentials(user, password);
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
  // Handed over at the end of the read pass, with the others the same pass read (hand_over).
  unhanded_.at(token.subscription)
      .push_back(std::make_unique<Delivery>(*this, token, std::move(message), queue));
}

void RabbitMqTransport::hand_over() {
  // The stand-in does not help: what it reads goes to the sinks' own threads.
  const bool helper_follows = !consumer_->standing_in();
  for (std::size_t index = 0; index < unhanded_.size(); ++index) {
    auto& deliveries = unhanded_[index];
    if (deliveries.empty())
      continue;
    const SinkAccess::Use sink = sinks_.enter(index);
    if (!sink) {
      // Its worker stopped consuming: back to the queue, for another consumer.
      for (auto& delivery : deliveries)
        delivery->settle(transport::Settlement::requeue());
      deliveries.clear();
    } else if (!helper_follows) {
      sink->deliver_all(deliveries);
    } else if (sink->deliver_all_to_helper(deliveries) &&
               std::find(to_help_.begin(), to_help_.end(), index) == to_help_.end()) {
      to_help_.push_back(index);
    }
  }
}

bool RabbitMqTransport::begin_help() {
  helping_.swap(to_help_);
  to_help_.clear();
  return !helping_.empty();
}

void RabbitMqTransport::help(const std::function<bool()>& enough) {
  for (const std::size_t index : helping_) {
    transport::DeliverySink* enlisted = nullptr;
    if (const SinkAccess::Use sink = sinks_.enter(index)) {
      if (enough())
        sink->wake_takers();  // its own threads take what it queued for the helper
      else if (sink->enlist_helper())
        enlisted = &*sink;
    }
    // Outside the access: the enlistment keeps the sink alive, and a stop_consuming() meanwhile
    // need not wait for the handlers this runs.
    if (enlisted != nullptr)
      enlisted->help(enough);
  }
}

void RabbitMqTransport::stood_in() {
  for (const std::size_t index : helping_) {
    if (const SinkAccess::Use sink = sinks_.enter(index))
      sink->wake_takers();
  }
}

void RabbitMqTransport::settle(const Delivery& delivery, const transport::Settlement& settlement,
                               bool wake) {
  const auto now = std::chrono::milliseconds(0);
  switch (settlement.kind) {
    case transport::Settlement::Kind::ack:
      consumer_->settle(delivery.token(), SettleAction::ack, now, wake);
      return;
    case transport::Settlement::Kind::requeue:
      consumer_->settle(delivery.token(), SettleAction::requeue, now, wake);
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
    std::string what =
        std::string("its retry could not be published into the delay levels (") + e.what() + ")";
    if (route_broken(e)) {
      consumer_->repair_retry_routes(delivery.token().subscription);
      what += "; the host declares the delay levels and the queue's delivery binding again";
    }
    requeue_after_backoff(delivery, what);
  }
  requeue_backoff_->succeeded(delivery.token().subscription);
  consumer_->settle(delivery.token(), SettleAction::ack);
}

void RabbitMqTransport::requeue_after_backoff(const Delivery& delivery,
                                              const std::string& what_failed) {
  const auto wait =
      requeue_backoff_->failed(delivery.token().subscription, transport::random_unit());
  consumer_->settle(delivery.token(), SettleAction::requeue, wait);
  throw transport::SettledOtherwise(transport::Settlement::Kind::requeue,
                                    what_failed + "; the message is held for " +
                                        std::to_string(wait.count()) +
                                        " ms, then requeued as it is (this attempt runs again)");
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
    const config::WorkerConfig* worker = config_.find_worker(subscription.worker);
    if ((worker != nullptr && worker->allow_message_loss) ||
        (queue != nullptr && queue->allow_message_loss)) {
      observability::log(
          observability::LogLevel::error, observability::LogFields::for_worker(settlement.worker),
          "neither worker '" + subscription.worker + "' nor queue '" + original.queue +
              "' has a dead-letter exchange: the message is rejected, and lost "
              "unless the queue has one on the broker (allow_message_loss = true)");
      consumer_->settle(delivery.token(), SettleAction::reject);
      return;
    }
    // `warren check` refuses such a worker; a config made in code can still get here.
    requeue_after_backoff(delivery, "neither worker '" + subscription.worker + "' nor queue '" +
                                        original.queue + "' has a dead-letter exchange");
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
    // Not rejected: without a dead-letter exchange of its own, the queue would drop it.
    requeue_after_backoff(delivery, std::string("its dead letter could not be published to '") +
                                        exchange + "' (" + e.what() + ")");
  }
  requeue_backoff_->succeeded(delivery.token().subscription);
  consumer_->settle(delivery.token(), SettleAction::ack);
}

}  // namespace warren::broker
