// See consumer_connection.h.
#include "broker/consumer_connection.h"

#include <amqp_framing.h>

#include <thread>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/channel_numbers.h"
#include "broker/inbound_delivery.h"
#include "observability/log.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

using Clock = std::chrono::steady_clock;

// How long stop_consuming() and close() wait for the I/O thread to answer.
constexpr auto kControlTimeout = std::chrono::seconds(20);

}  // namespace

ConsumerConnection::ConsumerConnection(ConsumerOptions options, const config::Config& config,
                                       std::vector<transport::Subscription> subscriptions,
                                       DeliveryCallback on_delivery,
                                       observability::Metrics* metrics,
                                       observability::Health* health)
    : IoLoop(options, {"broker consumer I/O", "connection"}, health),
      close_grace_(options.close_grace),
      topology_(config),
      on_delivery_(std::move(on_delivery)),
      metrics_(metrics),
      commands_(wakeup()),
      ledger_(subscriptions.size()) {
  for (auto& subscription : subscriptions) {
    Subscriber subscriber;
    subscriber.queue = subscription.queue;
    subscriber.subscription = std::move(subscription);
    subscribers_.push_back(std::move(subscriber));
  }
}

ConsumerConnection::~ConsumerConnection() {
  stop_loop();
}

void ConsumerConnection::start() {
  start_loop();
  std::unique_lock lock(first_setup_mutex_);
  first_setup_cv_.wait(lock, [&] { return first_setup_done_; });
  if (!first_setup_topology_error_.empty()) {
    const std::string error = first_setup_topology_error_;
    lock.unlock();
    stop_loop();
    throw TopologyError(error);
  }
}

void ConsumerConnection::run_control(Command::Kind kind) {
  if (!loop_started())
    return;
  Command command;
  command.kind = kind;
  command.done = std::make_shared<std::promise<void>>();
  auto done = command.done->get_future();
  commands_.push(std::move(command));
  if (done.wait_for(kControlTimeout) != std::future_status::ready) {
    observability::log_warn("broker consumer did not answer within " +
                            std::to_string(kControlTimeout.count()) + " s; going on");
  }
}

void ConsumerConnection::stop_consuming() {
  run_control(Command::Kind::cancel);
}

void ConsumerConnection::close() {
  run_control(Command::Kind::close);
  stop_loop();
}

void ConsumerConnection::settle(const DeliveryToken& token, SettleAction action) {
  Command command;
  command.kind = Command::Kind::settle;
  command.token = token;
  command.action = action;
  commands_.push(std::move(command));
}

void ConsumerConnection::first_setup_done(const std::string& topology_error) {
  std::lock_guard lock(first_setup_mutex_);
  if (first_setup_done_)
    return;
  first_setup_done_ = true;
  first_setup_topology_error_ = topology_error;
  first_setup_cv_.notify_all();
}

// --- Connecting ---

TopologyDeclarer::QueueNames ConsumerConnection::declare_topology(AmqpConnection& connection) {
  std::vector<std::string> consumed;
  for (const auto& subscriber : subscribers_)
    consumed.push_back(subscriber.subscription.queue);
  amqp_channel_open(connection.state(), kTopologyChannel);
  connection.check(connection.last_reply(), "opening the topology channel");
  auto names = topology_.declare(connection, kTopologyChannel, consumed);
  amqp_channel_close(connection.state(), kTopologyChannel, AMQP_REPLY_SUCCESS);
  connection.check(connection.last_reply(), "closing the topology channel");
  return names;
}

void ConsumerConnection::prepare_connection(AmqpConnection& connection) {
  declared_ = declare_topology(connection);
}

void ConsumerConnection::on_connected() {
  AmqpConnection& current = *connection();
  for (std::size_t index = 0; index < subscribers_.size(); ++index) {
    Subscriber& subscriber = subscribers_[index];
    const auto it = declared_.find(subscriber.subscription.queue);
    subscriber.queue = it != declared_.end() ? it->second : subscriber.subscription.queue;
    amqp_channel_open(current.state(), consumer_channel(index));
    current.check(current.last_reply(),
                  "opening the channel of worker '" + subscriber.subscription.worker + "'");
    subscribe(index);
  }
  reset_backoff();
  if (metrics_ != nullptr)
    metrics_->broker_connected().Set(1);
  observability::log_info("connected to " + current.endpoint().describe() + "; " +
                          std::to_string(subscribers_.size()) + " worker(s) consuming");
  update_ready();
  first_setup_done("");
}

void ConsumerConnection::on_connect_failed(const std::string& why, bool refused,
                                           std::chrono::milliseconds retry_in) {
  if (refused)
    observability::log_error("topology refused by the broker: " + why);
  else
    observability::log_warn(why);
  observability::log_info("reconnecting in " + std::to_string(retry_in.count()) + " ms");
  first_setup_done(refused ? why : "");
}

void ConsumerConnection::subscribe(std::size_t index) {
  AmqpConnection& current = *connection();
  Subscriber& subscriber = subscribers_[index];
  const auto& subscription = subscriber.subscription;
  const ChannelNumber channel = consumer_channel(index);
  amqp_basic_qos(current.state(), channel, 0, subscription.prefetch, 0);
  current.check(current.last_reply(), "setting prefetch of worker '" + subscription.worker + "'");
  const std::string tag = "warren." + subscription.worker + "." +
                          std::to_string(ledger_.incarnation(index)) + "." +
                          transport::random_hex(4);
  amqp_basic_consume(current.state(), channel, bytes_of(subscriber.queue), bytes_of(tag), 0, 0, 0,
                     amqp_empty_table);
  const auto reply = current.last_reply();
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    throw_declare_error(reply, "consuming queue '" + subscriber.queue + "' for worker '" +
                                   subscription.worker + "'");
  }
  subscriber.consumer_tag = tag;
}

void ConsumerConnection::update_ready() {
  bool all = connection() != nullptr && !cancelled_;
  for (const auto& subscriber : subscribers_)
    all = all && !subscriber.consumer_tag.empty();
  ready_ = all;
}

// --- Losing the connection, leaving ---

void ConsumerConnection::on_connection_lost(const std::string& why) {
  const bool was_connected = connection() != nullptr;
  drop_connection();          // no close handshake: the peer may be gone
  ledger_.connection_lost();  // every delivery handed out so far is stale now
  for (auto& subscriber : subscribers_)
    subscriber.consumer_tag.clear();
  update_ready();
  if (metrics_ != nullptr) {
    metrics_->broker_connected().Set(0);
    if (was_connected)
      metrics_->broker_reconnects().Increment();
  }
  observability::log_warn(why + "; unacked deliveries go back to the queue" +
                          (cancelled_ ? " (stopping: not reconnecting)" : ", reconnecting"));
  if (!cancelled_)  // stopping: nothing to consume any more
    schedule_reconnect();
}

void ConsumerConnection::on_loop_exit() {
  // Abandoned (destructor without close): no handshake, the broker requeues what is unacked.
  ready_ = false;
  first_setup_done("");
}

// --- Settlements and control commands ---

void ConsumerConnection::service_commands() {
  apply(commands_.take());
}

void ConsumerConnection::apply(std::vector<Command> commands) {
  // One command at a time: a connection lost while applying one must not swallow the ones after
  // it (a cancel or close among them would be forgotten, and the next connection would consume
  // again during the shutdown). After the loss, settlements are dropped as stale.
  for (auto& command : commands) {
    try {
      apply_one(command);
    } catch (const ConnectionLost& e) {
      on_connection_lost(e.what());
    }
    if (command.done)
      command.done->set_value();
  }
  try {
    flush_acks();
  } catch (const ConnectionLost& e) {
    on_connection_lost(e.what());
  }
}

void ConsumerConnection::apply_one(const Command& command) {
  switch (command.kind) {
    case Command::Kind::settle:
      settle_now(command.token, command.action);
      return;
    case Command::Kind::cancel:
      cancel_all();
      return;
    case Command::Kind::close:
      close_gracefully();
      finish_loop();
      return;
  }
}

void ConsumerConnection::settle_now(const DeliveryToken& token, SettleAction action) {
  const auto verdict =
      connection() != nullptr ? ledger_.settle(token, action) : AckLedger::Verdict::stale;
  switch (verdict) {
    case AckLedger::Verdict::stale:
      if (metrics_ != nullptr)
        metrics_->stale_acks_dropped().Increment();
      return;
    case AckLedger::Verdict::unknown:  // settled twice: ignore
    case AckLedger::Verdict::held:     // an ack: flush_acks() sends it
      return;
    case AckLedger::Verdict::send_now:
      break;
  }
  amqp_connection_state_t state = connection()->state();
  const ChannelNumber channel = consumer_channel(token.subscription);
  const int status = action == SettleAction::requeue
                         ? amqp_basic_nack(state, channel, token.tag, 0, 1)
                         : amqp_basic_reject(state, channel, token.tag, 0);
  if (status != AMQP_STATUS_OK)
    throw ConnectionLost("settling: " + status_text(status));
}

void ConsumerConnection::flush_acks() {
  if (connection() == nullptr)
    return;
  amqp_connection_state_t state = connection()->state();
  for (std::size_t index = 0; index < subscribers_.size(); ++index) {
    if (!ledger_.has_held_acks(index))
      continue;
    const AckPlan plan = ledger_.take_acks(index);
    const ChannelNumber channel = consumer_channel(index);
    if (plan.multiple_up_to) {
      const int status = amqp_basic_ack(state, channel, *plan.multiple_up_to, 1);
      if (status != AMQP_STATUS_OK)
        throw ConnectionLost("acking: " + status_text(status));
    }
    for (const std::uint64_t tag : plan.singles) {
      const int status = amqp_basic_ack(state, channel, tag, 0);
      if (status != AMQP_STATUS_OK)
        throw ConnectionLost("acking: " + status_text(status));
    }
  }
}

void ConsumerConnection::stop_subscribing() {
  // Decided before any I/O: a connection lost on the way must not bring consuming back.
  cancelled_ = true;
  ready_ = false;
}

void ConsumerConnection::cancel_all() {
  stop_subscribing();
  if (connection() == nullptr)
    return;
  try {
    flush_acks();
    for (std::size_t index = 0; index < subscribers_.size(); ++index) {
      Subscriber& subscriber = subscribers_[index];
      if (subscriber.consumer_tag.empty())
        continue;
      amqp_basic_cancel(connection()->state(), consumer_channel(index),
                        bytes_of(subscriber.consumer_tag));
      connection()->check(connection()->last_reply(), "cancelling the consumer of worker '" +
                                                          subscriber.subscription.worker + "'");
      subscriber.consumer_tag.clear();
    }
  } catch (const ConnectionLost& e) {
    on_connection_lost(e.what());
  }
}

void ConsumerConnection::close_gracefully() {
  stop_subscribing();
  if (connection() == nullptr)
    return;
  try {
    flush_acks();
    amqp_connection_state_t state = connection()->state();
    // A synchronous round trip per channel: once qos-ok arrives, the channel has processed every
    // ack sent before it.
    for (std::size_t index = 0; index < subscribers_.size(); ++index) {
      amqp_basic_qos(state, consumer_channel(index), 0, subscribers_[index].subscription.prefetch,
                     0);
      connection()->check(connection()->last_reply(), "flushing acks");
    }
    std::this_thread::sleep_for(close_grace_);  // rabbitmq-server issue 10327
    for (std::size_t index = 0; index < subscribers_.size(); ++index)
      amqp_channel_close(state, consumer_channel(index), AMQP_REPLY_SUCCESS);
    close_connection();
  } catch (const ConnectionLost& e) {
    observability::log_warn(std::string("closing the consumer connection: ") + e.what());
  }
  drop_connection();
  if (metrics_ != nullptr)
    metrics_->broker_connected().Set(0);
  observability::log_info("consumer connection closed");
}

// --- Frames ---

void ConsumerConnection::service_connection() {
  read_frames();
  resubscribe_cancelled();
}

void ConsumerConnection::on_frame(const amqp_frame_t& frame) {
  if (frame.frame_type != AMQP_FRAME_METHOD)
    return;
  const amqp_method_t& method = frame.payload.method;
  switch (method.id) {
    case AMQP_BASIC_DELIVER_METHOD: {
      const auto index = subscription_on(frame.channel, subscribers_.size());
      if (!index)
        throw ConnectionLost("delivery on unknown channel");
      on_delivery(*index, frame);
      return;
    }
    case AMQP_BASIC_CANCEL_METHOD: {
      const auto* cancel = static_cast<const amqp_basic_cancel_t*>(method.decoded);
      on_cancelled(string_of(cancel->consumer_tag));
      return;
    }
    default:
      return;
  }
}

void ConsumerConnection::on_channel_closed(ChannelNumber channel, int /*reply_code*/,
                                           const std::string& reply_text) {
  // The whole connection is recovered; recovering the channel alone is issue 19.
  const auto index = subscription_on(channel, subscribers_.size());
  throw ConnectionLost(
      "the broker closed channel " + std::to_string(channel) +
      (index ? " (worker '" + subscribers_[*index].subscription.worker + "')" : std::string()) +
      ": " + reply_text);
}

void ConsumerConnection::on_delivery(std::size_t index, const amqp_frame_t& frame) {
  const auto* deliver = static_cast<const amqp_basic_deliver_t*>(frame.payload.method.decoded);
  const std::uint64_t tag = deliver->delivery_tag;
  Subscriber& subscriber = subscribers_[index];
  transport::InboundMessage inbound =
      read_delivery(*connection(), frame, subscriber.subscription.queue);
  const DeliveryToken token = ledger_.delivered(index, tag);
  on_delivery_(token, std::move(inbound), subscriber.queue);
}

void ConsumerConnection::on_cancelled(const std::string& consumer_tag) {
  for (auto& subscriber : subscribers_) {
    if (subscriber.consumer_tag != consumer_tag)
      continue;
    subscriber.consumer_tag.clear();
    subscriber.resubscribe_at = Clock::now();
    observability::log(observability::LogLevel::warn,
                       observability::LogFields::for_worker(subscriber.subscription.worker),
                       "the broker cancelled the consumer of queue '" + subscriber.queue +
                           "' (deleted, or a failover); subscribing again");
  }
  update_ready();
}

void ConsumerConnection::resubscribe_cancelled() {
  if (cancelled_)
    return;
  const auto now = Clock::now();
  bool any = false;
  for (const auto& subscriber : subscribers_)
    any = any || (subscriber.consumer_tag.empty() && subscriber.resubscribe_at <= now);
  if (!any)
    return;
  try {
    // Declare again (a deleted queue that the config declares comes back), then consume.
    const auto names = declare_topology(*connection());
    for (std::size_t index = 0; index < subscribers_.size(); ++index) {
      Subscriber& subscriber = subscribers_[index];
      if (!subscriber.consumer_tag.empty())
        continue;
      const auto it = names.find(subscriber.subscription.queue);
      if (it != names.end())
        subscriber.queue = it->second;
      subscribe(index);
      observability::log(observability::LogLevel::info,
                         observability::LogFields::for_worker(subscriber.subscription.worker),
                         "consuming queue '" + subscriber.queue + "' again");
    }
  } catch (const TopologyError& e) {
    // The channel that failed is closed by the broker: reconnecting is the clean way back.
    throw ConnectionLost(std::string("cannot subscribe again: ") + e.what());
  }
  update_ready();
}

}  // namespace warren::broker
