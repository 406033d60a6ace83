// See consumer_connection.h. This file: each worker's subscription on the consuming connection,
// on its own (issue 19, defect 5): making its queue ready, consuming, losing its consumer or its
// channel, trying again on its own backoff, what readiness says about it, and repairing its
// retry routes (issue 19, defect 6).
#include "broker/consumer_connection.h"  // first: it includes <amqp.h> before <amqp_framing.h>

#include <amqp_framing.h>

#include <algorithm>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/channel_numbers.h"
#include "observability/log.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

using Clock = std::chrono::steady_clock;

// Repairs of the retry routes are at least this far apart: every retry published before one is
// returned too, and needs none of its own.
constexpr auto kRouteRepairInterval = std::chrono::seconds(1);

void open_channel(AmqpConnection& connection, ChannelNumber channel, const std::string& what) {
  amqp_channel_open(connection.state(), channel);
  connection.check(connection.last_reply(), what);
}

// After a TopologyError on `channel`: when the broker closed only that channel (a 404, 403, 405
// or 406 on a declaration or basic.consume), answers channel.close-ok, so that the channel number
// can be opened again, and returns true. False when the broker closed the whole connection.
bool acknowledge_channel_close(AmqpConnection& connection, ChannelNumber channel) {
  const amqp_rpc_reply_t reply = connection.last_reply();
  if (reply.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
      reply.reply.id != AMQP_CHANNEL_CLOSE_METHOD)
    return false;
  amqp_channel_close_ok_t ok{};
  const int status =
      amqp_send_method(connection.state(), channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
  if (status != AMQP_STATUS_OK)
    throw ConnectionLost("acknowledging the close of channel " + std::to_string(channel) + ": " +
                         status_text(status));
  return true;
}

}  // namespace

std::vector<std::string> ConsumerConnection::not_ready_reasons() const {
  std::lock_guard lock(reasons_mutex_);
  return not_ready_reasons_;
}

bool ConsumerConnection::prepare_queue(AmqpConnection& connection, std::size_t index,
                                       const TopologyDeclarer::QueueNames& declared) {
  SubscriberState& subscriber = subscribers_[index];
  open_channel(connection, kTopologyChannel, "opening the topology channel");
  try {
    subscriber.set_queue(topology_.prepare_consumed(connection, kTopologyChannel,
                                                    subscriber.subscription().queue,
                                                    subscriber.worker(), declared));
  } catch (const TopologyError& e) {
    if (first_setup_pending() || !acknowledge_channel_close(connection, kTopologyChannel))
      throw;
    subscription_failed(index, e.what());
    return false;
  }
  amqp_channel_close(connection.state(), kTopologyChannel, AMQP_REPLY_SUCCESS);
  connection.check(connection.last_reply(), "closing the topology channel");
  return true;
}

// The worker's channel (opened when it is not), then basic.qos and basic.consume. False when the
// broker refused (its queue gone meanwhile, say): then only that channel is lost, and the worker
// tries again after its backoff.
bool ConsumerConnection::try_subscribe(std::size_t index) {
  AmqpConnection& current = *connection();
  SubscriberState& subscriber = subscribers_[index];
  if (!subscriber.channel_open) {
    open_channel(current, consumer_channel(index),
                 "opening the channel of worker '" + subscriber.worker() + "'");
    subscriber.channel_open = true;
  }
  try {
    subscribe(index);
  } catch (const TopologyError& e) {
    if (first_setup_pending())
      throw;
    if (!acknowledge_channel_close(current, consumer_channel(index)))
      throw ConnectionLost(e.what());
    lose_channel(index);
    subscription_failed(index, e.what());
    return false;
  }
  return true;
}

void ConsumerConnection::subscribe(std::size_t index) {
  AmqpConnection& current = *connection();
  SubscriberState& subscriber = subscribers_[index];
  const auto& subscription = subscriber.subscription();
  const ChannelNumber channel = consumer_channel(index);
  amqp_basic_qos(current.state(), channel, 0, subscription.prefetch, 0);
  current.check(current.last_reply(), "setting prefetch of worker '" + subscription.worker + "'");
  const std::string tag = "warren." + subscription.worker + "." +
                          std::to_string(ledger_.incarnation(index)) + "." +
                          transport::random_hex(4);
  amqp_basic_consume(current.state(), channel, bytes_of(subscriber.queue()), bytes_of(tag), 0, 0, 0,
                     amqp_empty_table);
  const auto reply = current.last_reply();
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    throw_declare_error(reply, "consuming queue '" + subscriber.queue() + "' for worker '" +
                                   subscription.worker + "'");
  }
  if (subscriber.consuming_as(tag)) {
    observability::log(observability::LogLevel::info,
                       observability::LogFields::for_worker(subscriber.worker()),
                       "consuming queue '" + subscriber.queue() + "' again");
  }
}

// The broker closed the worker's channel (or refused a method on it, which closes it): what was
// delivered on it goes back to the queue, and settlements for it are stale from now on.
void ConsumerConnection::lose_channel(std::size_t index) {
  subscribers_[index].channel_open = false;
  subscribers_[index].stopped();
  ledger_.channel_lost(index);
  assembler_.drop(index);
}

void ConsumerConnection::subscription_failed(std::size_t index, const std::string& reason) {
  SubscriberState& subscriber = subscribers_[index];
  const bool news = subscriber.failed(reason, Clock::now(), transport::random_unit());
  const auto wait =
      std::chrono::duration_cast<std::chrono::milliseconds>(subscriber.retry_at() - Clock::now());
  if (news) {
    observability::log(observability::LogLevel::warn,
                       observability::LogFields::for_worker(subscriber.worker()),
                       "worker '" + subscriber.worker() + "' is not consuming: " + reason +
                           ". The other workers go on; this one tries again with backoff (said "
                           "again only when the reason changes)");
  } else {
    observability::log(observability::LogLevel::debug,
                       observability::LogFields::for_worker(subscriber.worker()),
                       "still not consuming; trying again in " +
                           std::to_string(std::max<std::int64_t>(wait.count(), 0)) + " ms");
  }
  update_ready();
}

void ConsumerConnection::update_ready() {
  std::vector<std::string> reasons;
  if (cancelled_) {
    reasons.emplace_back("stopping: no longer consuming");
  } else if (connection() == nullptr) {
    reasons.emplace_back("not connected to the broker (reconnecting)");
  } else {
    for (const auto& subscriber : subscribers_) {
      if (subscriber.consuming() || subscriber.retired)
        continue;
      reasons.push_back(!subscriber.reason().empty()
                            ? subscriber.reason()
                            : "worker '" + subscriber.worker() + "' is not consuming queue '" +
                                  subscriber.queue() + "' yet");
    }
  }
  ready_ = reasons.empty();
  std::lock_guard lock(reasons_mutex_);
  not_ready_reasons_ = std::move(reasons);
}

void ConsumerConnection::on_channel_closed(ChannelNumber channel, int /*reply_code*/,
                                           const std::string& reply_text) {
  const auto index = subscription_on(channel, subscribers_.size());
  if (!index) {  // the topology channel closes only inside a declaration, which handles it
    throw ConnectionLost("the broker closed channel " + std::to_string(channel) + ": " +
                         reply_text);
  }
  const SubscriberState& subscriber = subscribers_[*index];
  if (subscriber.server_named) {
    // Its queue outlives the channel and would be declared anew under another name, the old one
    // left behind collecting messages: a new connection takes both away.
    throw ConnectionLost("the broker closed the channel of worker '" + subscriber.worker() +
                         "' (a server-named queue: reconnecting): " + reply_text);
  }
  // That worker's channel alone: the others keep their deliveries and acks.
  amqp_channel_close_ok_t ok{};
  const int status =
      amqp_send_method(connection()->state(), channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
  if (status != AMQP_STATUS_OK)
    throw ConnectionLost("acknowledging a channel close: " + status_text(status));
  lose_channel(*index);
  subscription_failed(*index, "the broker closed the channel of worker '" + subscriber.worker() +
                                  "' on queue '" + subscriber.queue() + "' (" +
                                  explain_channel_close(reply_text) +
                                  "); its unacked deliveries go back to the queue");
}

void ConsumerConnection::on_cancelled(const std::string& consumer_tag) {
  for (auto& subscriber : subscribers_) {
    if (!subscriber.consuming() || subscriber.consumer_tag() != consumer_tag)
      continue;
    // The channel stays open: deliveries already handed out can still be acked on it.
    subscriber.interrupted("the broker cancelled the consumer of worker '" + subscriber.worker() +
                               "' on queue '" + subscriber.queue() + "'",
                           Clock::now());
    observability::log(observability::LogLevel::warn,
                       observability::LogFields::for_worker(subscriber.worker()),
                       "the broker cancelled the consumer of queue '" + subscriber.queue() +
                           "' (deleted, or a failover); subscribing again");
  }
  update_ready();
}

// Each worker not consuming whose backoff has passed: its queue made ready again (declared again
// when the config declares it, so that a deleted one comes back; checked when it does not), then
// basic.consume. A refusal stops that worker alone until its next attempt.
void ConsumerConnection::retry_due_subscriptions() {
  if (cancelled_)
    return;
  const auto now = Clock::now();
  for (std::size_t index = 0; index < subscribers_.size(); ++index) {
    if (!subscribers_[index].due(now))
      continue;
    try {
      if (prepare_queue(*connection(), index, {}))
        try_subscribe(index);
    } catch (const TopologyError& e) {  // the broker closed the connection over it
      throw ConnectionLost(std::string("cannot subscribe again: ") + e.what());
    }
    update_ready();
  }
}

// A retry came back unroutable (someone deleted or unbound part of the delay levels, or the
// binding that brings the worker's retries back): the same declarations as at connect, again, on
// the topology channel. Retries published before this repair come back too; their requeue and
// backoff bring them round again, so requests closer together than kRouteRepairInterval are
// dropped. A refusal is logged: the retries go on failing, requeued with backoff, until the cause
// is fixed.
void ConsumerConnection::repair_retry_routes_now(const std::vector<std::size_t>& subscriptions) {
  const auto now = Clock::now();
  if (connection() == nullptr || now - last_route_repair_ < kRouteRepairInterval)
    return;  // not connected: the next connection declares all of it anyway
  last_route_repair_ = now;
  std::vector<std::string> queues;
  for (const std::size_t index : subscriptions) {
    if (index >= subscribers_.size() || !subscribers_[index].consuming())
      continue;  // its queue is not ready: preparing it again binds it (retry_due_subscriptions)
    const std::string& queue = subscribers_[index].queue();
    if (std::find(queues.begin(), queues.end(), queue) == queues.end())
      queues.push_back(queue);
  }
  std::string described = "the retry delay levels";
  if (!queues.empty())
    described += " and the delivery binding of queue(s)";
  for (const auto& queue : queues)
    described += " '" + queue + "'";
  AmqpConnection& current = *connection();
  open_channel(current, kTopologyChannel, "opening the topology channel");
  try {
    topology_.declare_retry_routes(current, kTopologyChannel, queues);
  } catch (const TopologyError& e) {
    if (!acknowledge_channel_close(current, kTopologyChannel))
      throw ConnectionLost(std::string("declaring the retry routes again: ") + e.what());
    observability::log_error("a retry was returned unroutable, and declaring " + described +
                             " again failed: " + e.what() +
                             ". Retries are requeued with backoff until this is fixed");
    return;
  }
  amqp_channel_close(current.state(), kTopologyChannel, AMQP_REPLY_SUCCESS);
  current.check(current.last_reply(), "closing the topology channel");
  observability::log_warn("a retry was returned unroutable: declared " + described +
                          " again (were they deleted or unbound?)");
}

}  // namespace warren::broker
