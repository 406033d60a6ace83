// See consumer_connection.h.
#include "broker/consumer_connection.h"

#include <amqp_framing.h>

#include <algorithm>

#include "broker/ack_plan.h"
#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/inbound_delivery.h"
#include "broker/io_wait.h"
#include "observability/log.h"
#include "runtime/ids.h"

namespace warren::broker {
namespace {

using Clock = std::chrono::steady_clock;

// Channel 1 declares topology; subscription i consumes on channel i + 2.
constexpr amqp_channel_t kTopologyChannel = 1;
constexpr auto kControlTimeout = std::chrono::seconds(20);

}  // namespace

ConsumerConnection::ConsumerConnection(ConsumerOptions options, const config::Config& config,
                                       std::vector<runtime::Subscription> subscriptions,
                                       DeliveryCallback on_delivery,
                                       observability::Metrics* metrics,
                                       observability::Health* health)
    : options_(std::move(options)),
      config_(config),
      topology_(config),
      on_delivery_(std::move(on_delivery)),
      metrics_(metrics),
      backoff_(options_.reconnect_initial, options_.reconnect_max) {
  incarnation_ = 1;
  for (std::size_t i = 0; i < subscriptions.size(); ++i) {
    Channel channel;
    channel.subscription = std::move(subscriptions[i]);
    channel.id = static_cast<amqp_channel_t>(i + 2);
    channel.queue = channel.subscription.queue;
    channels_.push_back(std::move(channel));
  }
  if (health != nullptr) {
    heartbeat_ = health->register_loop("broker consumer I/O", std::chrono::seconds(10));
  }
}

ConsumerConnection::~ConsumerConnection() {
  if (thread_.joinable()) {
    stopping_ = true;
    commands_.wake();
    thread_.join();
  }
}

void ConsumerConnection::start() {
  thread_ = std::thread([this] { run(); });
  std::unique_lock lock(first_setup_mutex_);
  first_setup_cv_.wait(lock, [&] { return first_setup_done_; });
  if (!first_setup_topology_error_.empty()) {
    const std::string error = first_setup_topology_error_;
    lock.unlock();
    stopping_ = true;
    commands_.wake();
    thread_.join();
    throw TopologyError(error);
  }
}

void ConsumerConnection::run_control(Command::Kind kind) {
  if (!thread_.joinable())
    return;
  Command command;
  command.kind = kind;
  command.done = std::make_shared<std::promise<void>>();
  auto done = command.done->get_future();
  commands_.push(std::move(command));
  if (done.wait_for(kControlTimeout) != std::future_status::ready) {
    observability::log_warn("broker consumer did not answer within 20 s; going on");
  }
}

void ConsumerConnection::stop_consuming() {
  run_control(Command::Kind::cancel);
}

void ConsumerConnection::close() {
  run_control(Command::Kind::close);
  if (thread_.joinable()) {
    stopping_ = true;
    commands_.wake();
    thread_.join();
  }
}

void ConsumerConnection::settle(const DeliveryToken& token, SettleAction action) {
  Command command;
  command.kind = Command::Kind::settle;
  command.token = token;
  command.action = action;
  commands_.push(std::move(command));
}

void ConsumerConnection::run() {
  const auto tick = io_tick(options_.connection.heartbeat);
  while (!stopping_.load() && !closed_) {
    if (heartbeat_)
      heartbeat_->tick();
    apply(commands_.take());
    if (closed_)
      break;
    if (!connection_) {
      if (!cancelled_ && Clock::now() >= next_connect_attempt_)
        connect_and_setup();
      if (!connection_) {
        wait_for_io(nullptr, commands_.fd(), tick);
        continue;
      }
    }
    try {
      read_available_frames(*connection_, [this](const amqp_frame_t& frame) { on_frame(frame); });
      resubscribe_cancelled();
    } catch (const ConnectionLost& e) {
      teardown(e.what());
      continue;
    }
    wait_for_io(connection_.get(), commands_.fd(), tick);
  }
  // Abandoned (destructor without close): no handshake, the broker requeues what is unacked.
  connection_.reset();
  ready_ = false;
  if (heartbeat_)
    heartbeat_->retire();
  std::lock_guard lock(first_setup_mutex_);
  first_setup_done_ = true;
  first_setup_cv_.notify_all();
}

void ConsumerConnection::connect_and_setup() {
  const auto& endpoint = options_.endpoints[endpoint_index_ % options_.endpoints.size()];
  std::string topology_error;
  try {
    auto connection = AmqpConnection::open(endpoint, options_.connection);
    amqp_channel_open(connection->state(), kTopologyChannel);
    connection->check(connection->last_reply(), "opening the topology channel");
    std::vector<std::string> consumed;
    for (const auto& channel : channels_)
      consumed.push_back(channel.subscription.queue);
    const auto names = topology_.declare(*connection, kTopologyChannel, consumed);
    amqp_channel_close(connection->state(), kTopologyChannel, AMQP_REPLY_SUCCESS);
    connection->check(connection->last_reply(), "closing the topology channel");
    connection_ = std::move(connection);
    for (auto& channel : channels_) {
      const auto it = names.find(channel.subscription.queue);
      channel.queue = it != names.end() ? it->second : channel.subscription.queue;
      channel.outstanding.clear();
      channel.acked.clear();
      amqp_channel_open(connection_->state(), channel.id);
      connection_->check(connection_->last_reply(),
                         "opening the channel of worker '" + channel.subscription.worker + "'");
      subscribe(channel);
    }
    backoff_.reset();
    if (metrics_ != nullptr)
      metrics_->broker_connected().Set(1);
    observability::log_info("connected to " + endpoint.describe() + "; " +
                            std::to_string(channels_.size()) + " worker(s) consuming");
    update_ready();
  } catch (const TopologyError& e) {
    connection_.reset();
    topology_error = e.what();
    observability::log_error(std::string("topology refused by the broker: ") + e.what());
  } catch (const ConnectionLost& e) {
    connection_.reset();
    ++endpoint_index_;
    observability::log_warn(e.what());
  }
  if (!connection_) {
    const auto delay = backoff_.next(runtime::random_unit());
    next_connect_attempt_ = Clock::now() + delay;
    observability::log_info("reconnecting in " + std::to_string(delay.count()) + " ms");
  }
  std::lock_guard lock(first_setup_mutex_);
  if (!first_setup_done_) {
    first_setup_done_ = true;
    first_setup_topology_error_ = topology_error;
    first_setup_cv_.notify_all();
  }
}

void ConsumerConnection::subscribe(Channel& channel) {
  amqp_connection_state_t state = connection_->state();
  const auto& subscription = channel.subscription;
  amqp_basic_qos(state, channel.id, 0, subscription.prefetch, 0);
  connection_->check(connection_->last_reply(),
                     "setting prefetch of worker '" + subscription.worker + "'");
  const std::string tag = "warren." + subscription.worker + "." +
                          std::to_string(incarnation_.load()) + "." + runtime::random_hex(4);
  amqp_basic_consume(state, channel.id, bytes_of(channel.queue), bytes_of(tag), 0, 0, 0,
                     amqp_empty_table);
  const auto reply = connection_->last_reply();
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    throw_declare_error(
        reply, "consuming queue '" + channel.queue + "' for worker '" + subscription.worker + "'");
  }
  channel.consumer_tag = tag;
}

void ConsumerConnection::teardown(const std::string& why) {
  const bool was_connected = connection_ != nullptr;
  connection_.reset();  // no close handshake: the peer may be gone
  ++incarnation_;       // every delivery handed out so far is stale now
  for (auto& channel : channels_) {
    channel.consumer_tag.clear();
    channel.outstanding.clear();
    channel.acked.clear();
  }
  update_ready();
  if (metrics_ != nullptr) {
    metrics_->broker_connected().Set(0);
    if (was_connected)
      metrics_->broker_reconnects().Increment();
  }
  observability::log_warn(why + "; unacked deliveries go back to the queue" +
                          (cancelled_ ? " (stopping: not reconnecting)" : ", reconnecting"));
  if (cancelled_)
    return;  // stopping: nothing to consume any more
  const auto delay = backoff_.next(runtime::random_unit());
  next_connect_attempt_ = Clock::now() + delay;
}

void ConsumerConnection::update_ready() {
  bool all = connection_ != nullptr && !cancelled_;
  for (const auto& channel : channels_)
    all = all && !channel.consumer_tag.empty();
  ready_ = all;
}

void ConsumerConnection::apply(std::vector<Command> commands) {
  // One command at a time: a connection lost while applying one must not swallow the ones after
  // it (a cancel or close among them would be forgotten, and the next connection would consume
  // again during the shutdown). After the loss, settlements are dropped as stale.
  for (auto& command : commands) {
    try {
      apply_one(command);
    } catch (const ConnectionLost& e) {
      teardown(e.what());
    }
    if (command.done)
      command.done->set_value();
  }
  try {
    if (connection_) {
      for (auto& channel : channels_)
        flush_acks(channel);
    }
  } catch (const ConnectionLost& e) {
    teardown(e.what());
  }
}

void ConsumerConnection::apply_one(const Command& command) {
  switch (command.kind) {
    case Command::Kind::settle: {
      const DeliveryToken& token = command.token;
      if (!connection_ || token.incarnation != incarnation_.load()) {
        if (metrics_ != nullptr)
          metrics_->stale_acks_dropped().Increment();
        return;
      }
      Channel& channel = channels_.at(token.subscription);
      if (channel.outstanding.erase(token.tag) == 0)
        return;  // settled twice: ignore
      amqp_connection_state_t state = connection_->state();
      int status = AMQP_STATUS_OK;
      switch (command.action) {
        case SettleAction::ack:
          channel.acked.push_back(token.tag);
          break;
        case SettleAction::requeue:
          status = amqp_basic_nack(state, channel.id, token.tag, 0, 1);
          break;
        case SettleAction::reject:
          status = amqp_basic_reject(state, channel.id, token.tag, 0);
          break;
      }
      if (status != AMQP_STATUS_OK)
        throw ConnectionLost("settling: " + status_text(status));
      return;
    }
    case Command::Kind::cancel:
      cancel_all();
      return;
    case Command::Kind::close:
      close_gracefully();
      closed_ = true;
      return;
  }
}

void ConsumerConnection::flush_acks(Channel& channel) {
  if (channel.acked.empty() || !connection_)
    return;
  const AckPlan plan = plan_acks(std::move(channel.acked), channel.outstanding);
  channel.acked.clear();
  amqp_connection_state_t state = connection_->state();
  if (plan.multiple_up_to) {
    const int status = amqp_basic_ack(state, channel.id, *plan.multiple_up_to, 1);
    if (status != AMQP_STATUS_OK)
      throw ConnectionLost("acking: " + status_text(status));
  }
  for (const std::uint64_t tag : plan.singles) {
    const int status = amqp_basic_ack(state, channel.id, tag, 0);
    if (status != AMQP_STATUS_OK)
      throw ConnectionLost("acking: " + status_text(status));
  }
}

ConsumerConnection::Channel* ConsumerConnection::channel_by_id(amqp_channel_t id) {
  if (id < 2 || static_cast<std::size_t>(id - 2) >= channels_.size())
    return nullptr;
  return &channels_[id - 2];
}

void ConsumerConnection::on_frame(const amqp_frame_t& frame) {
  if (frame.frame_type != AMQP_FRAME_METHOD)
    return;
  const amqp_method_t& method = frame.payload.method;
  switch (method.id) {
    case AMQP_BASIC_DELIVER_METHOD: {
      Channel* channel = channel_by_id(frame.channel);
      if (channel == nullptr)
        throw ConnectionLost("delivery on unknown channel");
      on_delivery(*channel, frame);
      return;
    }
    case AMQP_BASIC_CANCEL_METHOD: {
      const auto* cancel = static_cast<const amqp_basic_cancel_t*>(method.decoded);
      const std::string tag = string_of(cancel->consumer_tag);
      for (auto& channel : channels_) {
        if (channel.consumer_tag != tag)
          continue;
        channel.consumer_tag.clear();
        channel.resubscribe_at = Clock::now();
        observability::log(observability::LogLevel::warn,
                           observability::LogFields::for_worker(channel.subscription.worker),
                           "the broker cancelled the consumer of queue '" + channel.queue +
                               "' (deleted, or a failover); subscribing again");
      }
      update_ready();
      return;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      const auto* close = static_cast<const amqp_channel_close_t*>(method.decoded);
      const Channel* channel = channel_by_id(frame.channel);
      throw ConnectionLost("the broker closed channel " + std::to_string(frame.channel) +
                           (channel != nullptr ? " (worker '" + channel->subscription.worker + "')"
                                               : std::string()) +
                           ": " + string_of(close->reply_text));
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      const auto* close = static_cast<const amqp_connection_close_t*>(method.decoded);
      amqp_connection_close_ok_t ok{};
      amqp_send_method(connection_->state(), 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      throw ConnectionLost("the broker closed the connection: " + string_of(close->reply_text));
    }
    default:
      return;
  }
}

void ConsumerConnection::on_delivery(Channel& channel, const amqp_frame_t& frame) {
  const auto* deliver = static_cast<const amqp_basic_deliver_t*>(frame.payload.method.decoded);
  const std::uint64_t tag = deliver->delivery_tag;
  runtime::InboundMessage inbound = read_delivery(*connection_, frame, channel.subscription.queue);
  channel.outstanding.insert(tag);
  const DeliveryToken token{incarnation_.load(), static_cast<std::size_t>(channel.id - 2), tag};
  on_delivery_(token, std::move(inbound), channel.queue);
}

void ConsumerConnection::resubscribe_cancelled() {
  if (cancelled_)
    return;
  const auto now = Clock::now();
  bool any = false;
  for (const auto& channel : channels_) {
    any = any || (channel.consumer_tag.empty() && channel.resubscribe_at <= now);
  }
  if (!any)
    return;
  std::vector<std::string> consumed;
  for (const auto& channel : channels_)
    consumed.push_back(channel.subscription.queue);
  try {
    // Declare again (a deleted queue that the config declares comes back), then consume.
    amqp_channel_open(connection_->state(), kTopologyChannel);
    connection_->check(connection_->last_reply(), "reopening the topology channel");
    const auto names = topology_.declare(*connection_, kTopologyChannel, consumed);
    amqp_channel_close(connection_->state(), kTopologyChannel, AMQP_REPLY_SUCCESS);
    for (auto& channel : channels_) {
      if (!channel.consumer_tag.empty())
        continue;
      const auto it = names.find(channel.subscription.queue);
      if (it != names.end())
        channel.queue = it->second;
      subscribe(channel);
      observability::log(observability::LogLevel::info,
                         observability::LogFields::for_worker(channel.subscription.worker),
                         "consuming queue '" + channel.queue + "' again");
    }
  } catch (const TopologyError& e) {
    // The channel that failed is closed by the broker: reconnecting is the clean way back.
    throw ConnectionLost(std::string("cannot subscribe again: ") + e.what());
  }
  update_ready();
}

void ConsumerConnection::cancel_all() {
  // Decided before any I/O: a connection lost on the way must not bring consuming back.
  cancelled_ = true;
  ready_ = false;
  if (!connection_)
    return;
  try {
    for (auto& channel : channels_)
      flush_acks(channel);
    for (auto& channel : channels_) {
      if (channel.consumer_tag.empty())
        continue;
      amqp_basic_cancel(connection_->state(), channel.id, bytes_of(channel.consumer_tag));
      connection_->check(connection_->last_reply(),
                         "cancelling the consumer of worker '" + channel.subscription.worker + "'");
      channel.consumer_tag.clear();
    }
  } catch (const ConnectionLost& e) {
    teardown(e.what());
  }
}

void ConsumerConnection::close_gracefully() {
  cancelled_ = true;
  ready_ = false;
  if (!connection_)
    return;
  try {
    for (auto& channel : channels_)
      flush_acks(channel);
    amqp_connection_state_t state = connection_->state();
    // A synchronous round trip per channel: once qos-ok arrives, the channel has processed every
    // ack sent before it.
    for (auto& channel : channels_) {
      amqp_basic_qos(state, channel.id, 0, channel.subscription.prefetch, 0);
      connection_->check(connection_->last_reply(), "flushing acks");
    }
    std::this_thread::sleep_for(options_.close_grace);  // rabbitmq-server issue 10327
    for (auto& channel : channels_)
      amqp_channel_close(state, channel.id, AMQP_REPLY_SUCCESS);
    connection_->close();
  } catch (const ConnectionLost& e) {
    observability::log_warn(std::string("closing the consumer connection: ") + e.what());
  }
  connection_.reset();
  if (metrics_ != nullptr)
    metrics_->broker_connected().Set(0);
  observability::log_info("consumer connection closed");
}

}  // namespace warren::broker
