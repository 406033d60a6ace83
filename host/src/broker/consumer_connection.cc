// See consumer_connection.h.
#include "broker/consumer_connection.h"

#include <amqp_framing.h>

#include <thread>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/channel_numbers.h"
#include "broker/inbound_delivery.h"
#include "observability/log.h"

namespace warren::broker {
namespace {

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
      refresher_(topology_, options.connection,
                 transport::reconnect_policy(options.reconnect_initial, options.reconnect_max)),
      on_delivery_(std::move(on_delivery)),
      metrics_(metrics),
      commands_(wakeup()),
      ledger_(subscriptions.size()),
      assembler_(subscriptions.size()) {
  const auto retry = transport::reconnect_policy(options.reconnect_initial, options.reconnect_max);
  for (auto& subscription : subscriptions) {
    const config::QueueConfig* queue = config.find_queue(subscription.queue);
    subscribers_.emplace_back(std::move(subscription), retry);
    subscribers_.back().server_named = queue != nullptr && queue->server_named;
    owned_by_connection_.push_back(queue != nullptr && owned_by_connection(*queue));
    const transport::Subscription& added = subscribers_.back().subscription();
    ledger_.hold_singles(subscribers_.size() - 1,
                         AckLedger::singles_to_hold(added.prefetch, added.settlers));
  }
}

ConsumerConnection::~ConsumerConnection() {
  stop_loop();
}

void ConsumerConnection::start() {
  if (metrics_ != nullptr && !counted_open_.exchange(true))
    metrics_->consumer_connection_opened();
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

ConsumerConnection::Command ConsumerConnection::control(Command::Kind kind) {
  Command command;
  command.kind = kind;
  return command;
}

void ConsumerConnection::run_control(Command command) {
  if (!loop_started())
    return;
  command.done = std::make_shared<std::promise<void>>();
  auto done = command.done->get_future();
  commands_.push(std::move(command));
  if (done.wait_for(kControlTimeout) != std::future_status::ready) {
    observability::log_warn("broker consumer did not answer within " +
                            std::to_string(kControlTimeout.count()) + " s; going on");
  }
}

void ConsumerConnection::stop_consuming() {
  run_control(control(Command::Kind::cancel));
}

void ConsumerConnection::stop_consuming(const std::string& worker) {
  // The subscriptions and their workers never change after construction: read from any thread.
  for (std::size_t index = 0; index < subscribers_.size(); ++index) {
    if (subscribers_[index].worker() != worker)
      continue;
    Command command = control(Command::Kind::cancel_one);
    command.token.subscription = index;
    run_control(std::move(command));
  }
}

void ConsumerConnection::close() {
  run_control(control(Command::Kind::close));
  // A handler the I/O thread runs (io_loop.h, LoopHelper) may outlive the host's shutdown
  // timeout, as one on a dispatcher's thread may: the close is done, the host goes on.
  stop_loop_unless_helping();
}

void ConsumerConnection::settle(const DeliveryToken& token, SettleAction action,
                                std::chrono::milliseconds after, bool wake) {
  Command command;
  command.kind = Command::Kind::settle;
  command.token = token;
  command.action = action;
  if (after > std::chrono::milliseconds(0))
    command.due = DeferredSettlements::Clock::now() + after;
  commands_.push(std::move(command), wake);
}

void ConsumerConnection::repair_retry_routes(std::size_t subscription) {
  Command command;
  command.kind = Command::Kind::repair_retry_routes;
  command.token.subscription = subscription;
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

bool ConsumerConnection::first_setup_pending() {
  std::lock_guard lock(first_setup_mutex_);
  return !first_setup_done_;
}

// --- Connecting ---

void ConsumerConnection::prepare_connection(AmqpConnection& connection) {
  assembler_.drop_all();
  for (auto& subscriber : subscribers_) {  // whatever a failed connect left
    subscriber.channel_open = false;
    subscriber.stopped();
  }
  prepared_.assign(subscribers_.size(), false);
  resumed_ = declared_once_;
  if (resumed_) {
    // Consume first, declare after (on_connected, topology_refresher.h): only a queue that went
    // with the old connection is declared now, before its worker consumes it.
    for (std::size_t index = 0; index < subscribers_.size(); ++index)
      prepared_[index] = !subscribers_[index].retired &&
                         (!owned_by_connection_[index] || prepare_queue(connection, index, {}));
    return;
  }
  // What every worker shares: a refusal here refuses the connection (retried as a whole).
  amqp_channel_open(connection.state(), kTopologyChannel);
  connection.check(connection.last_reply(), "opening the topology channel");
  const auto declared = topology_.declare_shared(connection, kTopologyChannel);
  amqp_channel_close(connection.state(), kTopologyChannel, AMQP_REPLY_SUCCESS);
  connection.check(connection.last_reply(), "closing the topology channel");
  // Each worker's queue: a refusal stops that worker alone (but fails the first setup).
  for (std::size_t index = 0; index < subscribers_.size(); ++index)
    prepared_[index] = !subscribers_[index].retired && prepare_queue(connection, index, declared);
  declared_once_ = true;
}

void ConsumerConnection::on_connected() {
  std::size_t consuming = 0;
  for (std::size_t index = 0; index < subscribers_.size(); ++index) {
    if (prepared_[index] && try_subscribe(index))
      ++consuming;
  }
  reset_backoff();
  count_up(true);
  const std::string all = std::to_string(subscribers_.size());
  observability::log_info(
      "connected to " + connection()->endpoint().describe() + "; " +
      (consuming == subscribers_.size() ? all : std::to_string(consuming) + " of " + all) +
      " worker(s) consuming");
  update_ready();
  first_setup_done("");
  if (resumed_) {
    std::vector<std::string> consumed;  // the delivery bindings of the retries, too
    for (std::size_t index = 0; index < subscribers_.size(); ++index) {
      if (!owned_by_connection_[index] && !subscribers_[index].retired)
        consumed.push_back(subscribers_[index].queue());
    }
    refresher_.refresh(connection()->endpoint(), std::move(consumed));
  }
}

void ConsumerConnection::on_connect_failed(const std::string& why, bool refused,
                                           std::chrono::milliseconds retry_in) {
  if (refused)
    observability::log_error("topology refused by the broker: " + why);
  else
    observability::log_warn(why);
  observability::log_info("reconnecting in " + std::to_string(retry_in.count()) + " ms");
  update_ready();
  first_setup_done(refused ? why : "");
}

// --- Losing the connection, leaving ---

void ConsumerConnection::on_connection_lost(const std::string& why) {
  const bool was_connected = connection() != nullptr;
  drop_connection();  // no close handshake: the peer may be gone
  if (was_connected)
    advance_endpoint();       // the other nodes first: this one may be frozen (issue 21)
  ledger_.connection_lost();  // every delivery handed out so far is stale now
  assembler_.drop_all();
  for (auto& subscriber : subscribers_) {
    subscriber.channel_open = false;
    subscriber.stopped();
  }
  update_ready();
  count_up(false);
  if (metrics_ != nullptr) {
    if (was_connected)
      metrics_->broker_reconnects().Increment();
  }
  observability::log_warn(why + "; unacked deliveries go back to the queue" +
                          (cancelled_ ? " (stopping: not reconnecting)" : ", reconnecting"));
  if (!cancelled_)  // stopping: nothing to consume any more
    schedule_reconnect();
}

void ConsumerConnection::count_up(bool up) {
  if (metrics_ == nullptr || !counted_open_.load() || counted_up_ == up)
    return;
  counted_up_ = up;
  metrics_->consumer_connection_up(up);
}

void ConsumerConnection::count_closed() {
  if (metrics_ == nullptr || !counted_open_.exchange(false))
    return;
  metrics_->consumer_connection_closed(counted_up_);
  counted_up_ = false;
}

void ConsumerConnection::on_loop_exit() {
  // Abandoned (destructor without close): no handshake, the broker requeues what is unacked.
  count_closed();
  ready_ = false;
  first_setup_done("");
}

// --- Settlements and control commands ---

void ConsumerConnection::service_commands() {
  settle_deferred(deferred_.take_due(DeferredSettlements::Clock::now()));
  commands_.take_into(taken_commands_);
  apply(taken_commands_);
  taken_commands_.clear();  // now: what the commands hold goes, the capacity stays
}

void ConsumerConnection::apply(std::vector<Command>& commands) {
  // One command at a time: a connection lost while applying one must not swallow the ones after
  // it (a cancel or close among them would be forgotten, and the next connection would consume
  // again during the shutdown). After the loss, settlements are dropped as stale.
  const auto now = DeferredSettlements::Clock::now();
  std::vector<std::size_t> repairs;  // one repair for every request of this turn
  for (auto& command : commands) {
    if (command.kind == Command::Kind::settle && command.due > now) {
      deferred_.add({command.token, command.action, command.due});
      continue;
    }
    if (command.kind == Command::Kind::repair_retry_routes) {
      repairs.push_back(command.token.subscription);
      continue;
    }
    try {
      apply_one(command);
    } catch (const ConnectionLost& e) {
      on_connection_lost(e.what());
    }
    if (command.done)
      command.done->set_value();
  }
  try {
    if (!repairs.empty())
      repair_retry_routes_now(repairs);
    flush_acks();
  } catch (const ConnectionLost& e) {
    on_connection_lost(e.what());
  }
}

void ConsumerConnection::settle_deferred(const std::vector<DeferredSettlements::Entry>& entries) {
  for (const auto& entry : entries) {
    try {
      settle_now(entry.token, entry.action);  // after a loss: stale, dropped and counted
    } catch (const ConnectionLost& e) {
      on_connection_lost(e.what());
    }
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
    case Command::Kind::cancel_one:
      retire(command.token.subscription);
      return;
    case Command::Kind::close:
      // What waits for its backoff goes now: the broker would requeue it at the close anyway,
      // but an explicit requeue is processed before the channel closes.
      settle_deferred(deferred_.take_all());
      close_gracefully();
      finish_loop();
      return;
    case Command::Kind::repair_retry_routes:  // batched by apply()
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

void ConsumerConnection::flush_acks(bool everything) {
  if (connection() == nullptr)
    return;
  amqp_connection_state_t state = connection()->state();
  const auto now = AckLedger::Clock::now();
  for (std::size_t index = 0; index < subscribers_.size(); ++index) {
    if (!ledger_.has_held_acks(index))
      continue;
    const AckPlan plan = ledger_.take_acks(index, now, everything);
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
  update_ready();
}

void ConsumerConnection::cancel_all() {
  stop_subscribing();
  if (connection() == nullptr)
    return;
  try {
    flush_acks(true);
    for (std::size_t index = 0; index < subscribers_.size(); ++index)
      cancel_consumer(index);
  } catch (const ConnectionLost& e) {
    on_connection_lost(e.what());
  }
}

void ConsumerConnection::retire(std::size_t index) {
  if (index >= subscribers_.size())
    return;
  // Decided before any I/O: a connection lost on the way must not subscribe it again.
  subscribers_[index].retired = true;
  if (connection() != nullptr) {
    try {
      flush_acks(true);
      cancel_consumer(index);
    } catch (const ConnectionLost& e) {
      on_connection_lost(e.what());
    }
  }
  update_ready();
}

void ConsumerConnection::cancel_consumer(std::size_t index) {
  SubscriberState& subscriber = subscribers_[index];
  if (!subscriber.consuming())
    return;
  amqp_basic_cancel(connection()->state(), consumer_channel(index),
                    bytes_of(subscriber.consumer_tag()));
  connection()->check(connection()->last_reply(),
                      "cancelling the consumer of worker '" + subscriber.worker() + "'");
  subscriber.stopped();
}

void ConsumerConnection::close_gracefully() {
  stop_subscribing();
  if (connection() == nullptr)
    return;
  try {
    flush_acks(true);
    amqp_connection_state_t state = connection()->state();
    // A synchronous round trip per channel: once qos-ok arrives, the channel has processed every
    // ack sent before it.
    // Only open channels: a method on a closed one would close the connection.
    for (std::size_t index = 0; index < subscribers_.size(); ++index) {
      if (!subscribers_[index].channel_open)
        continue;
      amqp_basic_qos(state, consumer_channel(index), 0, subscribers_[index].subscription().prefetch,
                     0);
      connection()->check(connection()->last_reply(), "flushing acks");
    }
    std::this_thread::sleep_for(close_grace_);  // rabbitmq-server issue 10327
    for (std::size_t index = 0; index < subscribers_.size(); ++index) {
      if (subscribers_[index].channel_open)
        amqp_channel_close(state, consumer_channel(index), AMQP_REPLY_SUCCESS);
    }
    close_connection();
  } catch (const ConnectionLost& e) {
    observability::log_warn(std::string("closing the consumer connection: ") + e.what());
  }
  drop_connection();
  count_closed();
  observability::log_info("consumer connection closed");
}

// --- Frames ---

void ConsumerConnection::service_connection() {
  try {
    read_frames();
  } catch (...) {
    // The deliveries read before the loss are stale now; handed over all the same, the runtime
    // sees them stale and drops them (the broker redelivers them).
    if (on_read_pass_end_)
      on_read_pass_end_();
    throw;
  }
  if (on_read_pass_end_)
    on_read_pass_end_();
  retry_due_subscriptions();
}

void ConsumerConnection::on_frame(const amqp_frame_t& frame) {
  if (frame.frame_type == AMQP_FRAME_HEADER || frame.frame_type == AMQP_FRAME_BODY) {
    if (const auto index = subscription_on(frame.channel, subscribers_.size())) {
      if (auto delivery = assembler_.on_content(*index, frame))
        on_delivery(*index, std::move(*delivery));
    }
    return;
  }
  if (frame.frame_type != AMQP_FRAME_METHOD)
    return;
  const amqp_method_t& method = frame.payload.method;
  switch (method.id) {
    case AMQP_BASIC_DELIVER_METHOD: {
      const auto index = subscription_on(frame.channel, subscribers_.size());
      if (!index)
        throw ConnectionLost("delivery on unknown channel");
      assembler_.on_deliver(*index, *static_cast<const amqp_basic_deliver_t*>(method.decoded),
                            subscribers_[*index].subscription().queue);
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

void ConsumerConnection::on_delivery(std::size_t index, DeliveryAssembler::Assembled delivery) {
  const DeliveryToken token = ledger_.delivered(index, delivery.delivery_tag);
  on_delivery_(token, std::move(delivery.message), subscribers_[index].queue());
}

}  // namespace warren::broker
