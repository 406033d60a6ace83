// See publisher_connection.h.
#include "broker/publisher_connection.h"

#include <amqp_framing.h>

#include <regex>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/io_wait.h"
#include "observability/log.h"
#include "runtime/ids.h"

namespace warren::broker {
namespace {

using Clock = std::chrono::steady_clock;
constexpr amqp_channel_t kChannel = 1;

std::int64_t now_ns() {
  return Clock::now().time_since_epoch().count();
}

// rabbitmq-c's encoding failures: the message's fault, not the connection's.
bool is_encoding_failure(int status) {
  return status == AMQP_STATUS_BAD_AMQP_DATA || status == AMQP_STATUS_TABLE_TOO_BIG;
}

}  // namespace

std::optional<std::string> why_unsendable(const runtime::OutboundMessage& message) {
  constexpr std::size_t kMaxShortString = 255;
  auto too_long = [](const std::string& what, std::size_t size) {
    return what + " is " + std::to_string(size) + " bytes long; AMQP allows at most " +
           std::to_string(kMaxShortString);
  };
  if (message.exchange.size() > kMaxShortString)
    return too_long("the exchange name", message.exchange.size());
  if (message.routing_key.size() > kMaxShortString)
    return too_long("the routing key", message.routing_key.size());
  if (message.message_id.size() > kMaxShortString)
    return too_long("the message id", message.message_id.size());
  if (message.content_type.size() > kMaxShortString)
    return too_long("the content type", message.content_type.size());
  for (const auto& [name, value] : message.headers) {
    if (name.size() > kMaxShortString)
      return too_long("header name '" + name.substr(0, 40) + "...'", name.size());
  }
  return std::nullopt;
}

PublisherConnection::PublisherConnection(PublisherOptions options, observability::Metrics* metrics,
                                         observability::Health* health)
    : options_(std::move(options)),
      metrics_(metrics),
      backoff_(options_.reconnect_initial, options_.reconnect_max) {
  if (health != nullptr) {
    heartbeat_ = health->register_loop("broker publisher I/O", std::chrono::seconds(10));
  }
  io_thread_ = std::thread([this] { run(); });
  watchdog_thread_ = std::thread([this] { watchdog(); });
}

PublisherConnection::~PublisherConnection() {
  close();
}

void PublisherConnection::close() {
  stopping_ = true;
  requests_.wake();
  if (io_thread_.joinable())
    io_thread_.join();
  if (watchdog_thread_.joinable())
    watchdog_thread_.join();
}

std::shared_ptr<PendingPublish> PublisherConnection::send(runtime::OutboundMessage message) {
  if (message.message_id.empty())
    message.message_id = runtime::random_uuid();
  auto pending =
      std::make_shared<PendingPublish>(std::move(message), Clock::now() + options_.publish_timeout);
  // Refused once the I/O thread closed the queue on its way out: nobody would resolve it.
  if (!requests_.push(pending))
    finish(pending, PendingPublish::Result::unavailable, ": the host is shutting down");
  return pending;
}

void PublisherConnection::publish(const runtime::OutboundMessage& message) {
  send(message)->wait();
}

void PublisherConnection::finish(const std::shared_ptr<PendingPublish>& pending,
                                 PendingPublish::Result result, std::string detail) {
  if (pending->resolved())
    return;
  pending->resolve(result, std::move(detail));
  if (metrics_ != nullptr) {
    metrics_->published(pending->message().exchange, result_label(result)).Increment();
  }
}

void PublisherConnection::run() {
  const auto tick = io_tick(options_.connection.heartbeat);
  while (!stopping_.load()) {
    if (heartbeat_)
      heartbeat_->tick();
    for (auto& request : requests_.take())
      waiting_.push_back(std::move(request));
    expire_deadlines();
    if (!connection_) {
      if (Clock::now() >= next_connect_attempt_)
        connect();
      if (!connection_) {
        wait_for_io(nullptr, requests_.fd(), tick);
        continue;
      }
    }
    try {
      send_waiting();
      read_available_frames(*connection_, [this](const amqp_frame_t& frame) { on_frame(frame); });
    } catch (const ConnectionLost& e) {
      teardown(e.what());
      continue;
    }
    wait_for_io(connection_.get(), requests_.fd(), tick);
  }
  // Shutting down: whatever is left fails now rather than hanging its caller; later sends are
  // refused by the closed queue.
  requests_.close();
  for (auto& request : requests_.take())
    waiting_.push_back(std::move(request));
  for (auto& pending : waiting_) {
    finish(pending, PendingPublish::Result::unavailable, ": the host is shutting down");
  }
  waiting_.clear();
  for (auto& [sequence, entry] : in_flight_) {
    finish(entry.publish, PendingPublish::Result::unavailable, ": the host is shutting down");
  }
  in_flight_.clear();
  std::lock_guard lock(connection_mutex_);
  // The broker does not read a blocked connection: a close handshake would only wait out its
  // timeout (2 s) before the process could exit.
  if (connection_ && !blocked_.load())
    connection_->close();
  connection_.reset();
  if (heartbeat_)
    heartbeat_->retire();
}

void PublisherConnection::connect() {
  const auto& endpoint = options_.endpoints[endpoint_index_ % options_.endpoints.size()];
  try {
    auto connection = AmqpConnection::open(endpoint, options_.connection);
    amqp_channel_open(connection->state(), kChannel);
    connection->check(connection->last_reply(), "opening the publishing channel");
    amqp_confirm_select(connection->state(), kChannel);
    connection->check(connection->last_reply(), "enabling publisher confirms");
    {
      std::lock_guard lock(connection_mutex_);
      connection_ = std::move(connection);
    }
    next_sequence_ = 1;
    blocked_ = false;
    connected_ = true;
    // The backoff is reset by the first confirm, not here: a connection that a poison publish
    // breaks at once must not reconnect in a tight loop.
    if (metrics_ != nullptr)
      metrics_->broker_blocked().Set(0);
    observability::log_info("publisher connected to " + endpoint.describe());
  } catch (const ConnectionLost& e) {
    ++endpoint_index_;  // failover: the next attempt tries the next host
    const auto delay = backoff_.next(runtime::random_unit());
    next_connect_attempt_ = Clock::now() + delay;
    observability::log_warn(std::string("publisher: ") + e.what() + "; retrying in " +
                            std::to_string(delay.count()) + " ms");
  }
}

void PublisherConnection::teardown(const std::string& why) {
  observability::log_warn("publisher: " + why + "; reconnecting");
  {
    std::lock_guard lock(connection_mutex_);
    connection_.reset();  // no close handshake: the peer may be dead
  }
  connected_ = false;
  blocked_ = false;
  for (auto& [sequence, entry] : in_flight_) {
    finish(entry.publish, PendingPublish::Result::unavailable,
           ": " + why + " (before the broker confirmed it: it may or may not have been published)");
  }
  in_flight_.clear();
  ++endpoint_index_;
  const auto delay = backoff_.next(runtime::random_unit());
  next_connect_attempt_ = Clock::now() + delay;
}

void PublisherConnection::expire_deadlines() {
  const auto now = Clock::now();
  const char* const blocked_detail = " (the broker is blocking publishers: memory or disk alarm)";
  std::erase_if(waiting_, [&](const std::shared_ptr<PendingPublish>& pending) {
    if (pending->deadline() > now)
      return false;
    finish(pending, PendingPublish::Result::timeout,
           blocked_.load() ? blocked_detail
                           : (connected_.load() ? "" : " (no connection to the broker)"));
    return true;
  });
  for (auto& [sequence, entry] : in_flight_) {
    if (entry.publish->resolved() || entry.publish->deadline() > now)
      continue;
    // Timed out while blocked: sent before the block took hold, so the broker may still route it
    // once the alarm ends (the caller must not assume it was dropped).
    finish(entry.publish, PendingPublish::Result::timeout,
           blocked_.load() ? std::string(blocked_detail) +
                                 "; sent before the block, it may still be published after it"
                           : std::string());
  }
  // Resolved entries stay in in_flight_ until their confirm arrives, so it is not misapplied.
}

void PublisherConnection::send_waiting() {
  if (blocked_.load())
    return;
  while (!waiting_.empty()) {
    auto pending = std::move(waiting_.front());
    waiting_.pop_front();
    if (pending->resolved())
      continue;
    publish_one(pending);
  }
}

void PublisherConnection::publish_one(const std::shared_ptr<PendingPublish>& pending) {
  const runtime::OutboundMessage& message = pending->message();
  if (auto why = why_unsendable(message)) {
    finish(pending, PendingPublish::Result::nacked, ": it cannot be sent: " + *why);
    return;
  }
  AmqpTableBuilder headers;
  headers.add_all(message.headers);
  amqp_basic_properties_t properties{};
  properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                      AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG;
  properties.content_type =
      bytes_of(message.content_type.empty() ? std::string_view("application/octet-stream")
                                            : std::string_view(message.content_type));
  properties.delivery_mode = message.persistent ? 2 : 1;
  properties.message_id = bytes_of(message.message_id);
  properties.timestamp =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  if (!headers.empty()) {
    properties._flags |= AMQP_BASIC_HEADERS_FLAG;
    properties.headers = headers.table();
  }
  publish_started_ns_ = now_ns();
  const int status = amqp_basic_publish(connection_->state(), kChannel, bytes_of(message.exchange),
                                        bytes_of(message.routing_key), message.mandatory ? 1 : 0, 0,
                                        &properties, bytes_of(message.body));
  publish_started_ns_ = 0;
  if (is_encoding_failure(status)) {
    // It would fail the same way on every connection; this one may hold half a message now.
    finish(pending, PendingPublish::Result::nacked, ": it cannot be sent: " + status_text(status));
    throw ConnectionLost("a publish could not be encoded (" + status_text(status) + ")");
  }
  if (status != AMQP_STATUS_OK) {
    waiting_.push_front(pending);  // not sent: try again on the next connection
    throw ConnectionLost("publish failed: " + status_text(status));
  }
  in_flight_.emplace(next_sequence_++, InFlight{pending, false, {}});
}

void PublisherConnection::confirm(std::uint64_t tag, bool multiple, PendingPublish::Result result) {
  auto end = multiple ? in_flight_.upper_bound(tag) : in_flight_.find(tag);
  auto begin = multiple ? in_flight_.begin() : end;
  if (!multiple) {
    if (end == in_flight_.end())
      return;
    ++end;
  }
  if (begin != end && result == PendingPublish::Result::confirmed)
    backoff_.reset();
  for (auto it = begin; it != end; ++it) {
    InFlight& entry = it->second;
    if (entry.returned && result == PendingPublish::Result::confirmed) {
      finish(entry.publish, PendingPublish::Result::returned, ": " + entry.return_text);
    } else {
      finish(entry.publish, result,
             result == PendingPublish::Result::nacked ? " by the broker (basic.nack)" : "");
    }
  }
  in_flight_.erase(begin, end);
}

void PublisherConnection::on_frame(const amqp_frame_t& frame) {
  if (frame.frame_type != AMQP_FRAME_METHOD)
    return;
  const amqp_method_t& method = frame.payload.method;
  switch (method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      const auto* ack = static_cast<const amqp_basic_ack_t*>(method.decoded);
      confirm(ack->delivery_tag, ack->multiple != 0, PendingPublish::Result::confirmed);
      return;
    }
    case AMQP_BASIC_NACK_METHOD: {
      const auto* nack = static_cast<const amqp_basic_nack_t*>(method.decoded);
      confirm(nack->delivery_tag, nack->multiple != 0, PendingPublish::Result::nacked);
      return;
    }
    case AMQP_BASIC_RETURN_METHOD: {
      const auto* returned = static_cast<const amqp_basic_return_t*>(method.decoded);
      const std::string exchange = string_of(returned->exchange);
      const std::string routing_key = string_of(returned->routing_key);
      const std::string text = std::to_string(returned->reply_code) + " " +
                               string_of(returned->reply_text) + " (exchange '" + exchange +
                               "', routing key '" + routing_key + "')";
      amqp_message_t message{};
      const amqp_rpc_reply_t read =
          amqp_read_message(connection_->state(), frame.channel, &message, 0);
      if (read.reply_type != AMQP_RESPONSE_NORMAL) {
        throw ConnectionLost("reading a returned message: " + reply_text(read));
      }
      const std::string message_id = (message.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
                                         ? string_of(message.properties.message_id)
                                         : std::string();
      amqp_destroy_message(&message);
      // The return precedes the confirm of the same publish: mark the oldest unmarked match.
      for (auto& [sequence, entry] : in_flight_) {
        const auto& sent = entry.publish->message();
        if (!entry.returned && sent.message_id == message_id && sent.exchange == exchange &&
            sent.routing_key == routing_key) {
          entry.returned = true;
          entry.return_text = text;
          break;
        }
      }
      return;
    }
    case AMQP_CONNECTION_BLOCKED_METHOD:
      blocked_ = true;
      if (metrics_ != nullptr)
        metrics_->broker_blocked().Set(1);
      observability::log_warn("the broker blocks publishing (memory or disk alarm)");
      return;
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
      blocked_ = false;
      if (metrics_ != nullptr)
        metrics_->broker_blocked().Set(0);
      observability::log_info("the broker unblocked publishing");
      return;
    case AMQP_CHANNEL_CLOSE_METHOD: {
      const auto* close = static_cast<const amqp_channel_close_t*>(method.decoded);
      const std::string text = string_of(close->reply_text);
      if (close->reply_code == AMQP_NOT_FOUND)
        refuse_publishes_to_missing_exchange(text);
      throw ConnectionLost("the broker closed the publishing channel: " + text);
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      const auto* close = static_cast<const amqp_connection_close_t*>(method.decoded);
      amqp_connection_close_ok_t ok{};
      amqp_send_method(connection_->state(), 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      throw ConnectionLost("the broker closed the publishing connection: " +
                           string_of(close->reply_text));
    }
    default:
      return;
  }
}

void PublisherConnection::refuse_publishes_to_missing_exchange(const std::string& reply_text) {
  // "NOT_FOUND - no exchange 'x' in vhost '/'": the broker refused the publishes to 'x' (the
  // others on the channel are lost with it and fail as unavailable when it is torn down).
  static const std::regex missing("no exchange '([^']*)'");
  std::smatch match;
  if (!std::regex_search(reply_text, match, missing))
    return;
  const std::string exchange = match[1];
  std::erase_if(in_flight_, [&](auto& entry) {
    if (entry.second.publish->message().exchange != exchange)
      return false;
    finish(entry.second.publish, PendingPublish::Result::nacked, ": " + reply_text);
    return true;
  });
}

void PublisherConnection::watchdog() {
  const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.publish_timeout);
  while (!stopping_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::int64_t started = publish_started_ns_.load();
    if (started == 0 || now_ns() - started < limit.count())
      continue;
    std::lock_guard lock(connection_mutex_);
    if (connection_ && publish_started_ns_.load() == started) {
      observability::log_warn(
          "publisher: a publish has been stuck in the socket for longer "
          "than publish_timeout; aborting the connection");
      connection_->abort_socket();
    }
  }
}

}  // namespace warren::broker
