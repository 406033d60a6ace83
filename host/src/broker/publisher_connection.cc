// See publisher_connection.h.
#include "broker/publisher_connection.h"

#include <amqp_framing.h>

#include <algorithm>
#include <regex>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/channel_numbers.h"
#include "broker/wire_properties.h"
#include "observability/log.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

using Clock = std::chrono::steady_clock;

// How often the watchdog looks for a socket call stuck in the socket.
constexpr auto kWatchdogInterval = std::chrono::milliseconds(100);

constexpr const char* kShuttingDown = ": the host is shutting down";
constexpr const char* kBlockedDetail = " (the broker is blocking publishers: memory or disk alarm)";

std::int64_t now_ns() {
  return Clock::now().time_since_epoch().count();
}

// rabbitmq-c's encoding failures: the message's fault, not the connection's.
bool is_encoding_failure(int status) {
  return status == AMQP_STATUS_BAD_AMQP_DATA || status == AMQP_STATUS_TABLE_TOO_BIG;
}

}  // namespace

std::optional<std::string> why_unsendable(const transport::OutboundMessage& message) {
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

std::optional<std::string> exchange_named_in(const std::string& reply_text) {
  static const std::regex named("exchange '([^']*)'");
  std::smatch match;
  if (!std::regex_search(reply_text, match, named))
    return std::nullopt;
  return match[1].str();
}

PublisherConnection::PublisherConnection(PublisherOptions options, observability::Metrics* metrics,
                                         observability::Health* health)
    : IoLoop(options, {"broker publisher I/O", "publishing connection"}, health),
      publish_timeout_(options.publish_timeout),
      metrics_(metrics),
      requests_(wakeup()) {
  start_loop();
  watchdog_thread_ = std::thread([this] { watchdog(); });
}

PublisherConnection::~PublisherConnection() {
  close();
}

void PublisherConnection::close() {
  // The watchdog keeps watching until the I/O thread is joined: a publish stuck in a blocked or
  // half-open socket would otherwise hold the join (and the process's exit) forever.
  if (close_deadline_ns_.load() == 0) {
    close_deadline_ns_ =
        now_ns() +
        std::chrono::duration_cast<std::chrono::nanoseconds>(kPublisherCloseGrace).count();
  }
  stop_loop();
  {
    std::lock_guard lock(watchdog_mutex_);
    watchdog_stopping_ = true;
  }
  watchdog_wake_.notify_all();
  if (watchdog_thread_.joinable())
    watchdog_thread_.join();
}

std::shared_ptr<PendingPublish> PublisherConnection::send(transport::OutboundMessage message) {
  if (message.message_id.empty())
    message.message_id = transport::random_uuid();
  auto pending =
      std::make_shared<PendingPublish>(std::move(message), Clock::now() + publish_timeout_);
  // Refused once the I/O thread closed the queue on its way out: nobody would resolve it.
  if (!requests_.push(pending))
    finish(pending, PendingPublish::Result::unavailable, kShuttingDown);
  return pending;
}

void PublisherConnection::publish(const transport::OutboundMessage& message) {
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

void PublisherConnection::finish(std::vector<ConfirmTracker::Verdict> verdicts) {
  for (auto& verdict : verdicts)
    finish(verdict.publish, verdict.result, std::move(verdict.detail));
}

// --- The loop ---

void PublisherConnection::service_commands() {
  for (auto& request : requests_.take())
    waiting_.push_back(std::move(request));
  expire_deadlines();
}

void PublisherConnection::service_connection() {
  send_waiting();
  read_frames();
  send_waiting();  // what the frames made sendable: an exchange found, the channel reopened
}

void PublisherConnection::prepare_connection(AmqpConnection& connection) {
  amqp_channel_open(connection.state(), kPublishChannel);
  connection.check(connection.last_reply(), "opening the publishing channel");
  amqp_confirm_select(connection.state(), kPublishChannel);
  connection.check(connection.last_reply(), "enabling publisher confirms");
}

void PublisherConnection::on_connected() {
  confirms_.restart();
  confirm_channel_ = ChannelState::open;
  check_channel_ = ChannelState::closed;  // opened with the first check
  set_blocked(false);
  // The backoff is reset by the first confirm, not here: a connection that a poison publish
  // breaks at once must not reconnect in a tight loop.
  observability::log_info("publisher connected to " + connection()->endpoint().describe());
}

void PublisherConnection::on_connect_failed(const std::string& why, bool /*refused*/,
                                            std::chrono::milliseconds retry_in) {
  observability::log_warn("publisher: " + why + "; retrying in " +
                          std::to_string(retry_in.count()) + " ms");
}

void PublisherConnection::on_connection_lost(const std::string& why) {
  observability::log_warn("publisher: " + why +
                          (stop_requested() ? "; closing" : "; reconnecting"));
  drop_connection();  // no close handshake: the peer may be dead
  blocked_ = false;
  confirm_channel_ = ChannelState::closed;
  check_channel_ = ChannelState::closed;
  finish(confirms_.fail_all(
      PendingPublish::Result::unavailable,
      ": " + why + " (before the broker confirmed it: it may or may not have been published)"));
  send_again(exchanges_.reset());  // never sent: they wait for the next connection
  advance_endpoint();
  schedule_reconnect();
}

void PublisherConnection::on_loop_exit() {
  // Shutting down: whatever is left fails now rather than hanging its caller; later sends are
  // refused by the closed queue.
  requests_.close();
  for (auto& request : requests_.take())
    waiting_.push_back(std::move(request));
  send_again(exchanges_.reset());
  for (auto& pending : waiting_)
    finish(pending, PendingPublish::Result::unavailable, kShuttingDown);
  waiting_.clear();
  finish(confirms_.fail_all(PendingPublish::Result::unavailable, kShuttingDown));
  // The broker does not read a blocked connection: a close handshake would only wait out its
  // timeout (2 s) before the process could exit. Guarded: the watchdog cuts it short at the
  // close deadline.
  if (connection() != nullptr && !blocked_.load())
    guarded([&] { close_connection(); });
}

// --- Publishing ---

void PublisherConnection::expire_deadlines() {
  const auto now = Clock::now();
  const char* unsent_detail =
      blocked_.load() ? kBlockedDetail : (connected() ? "" : " (no connection to the broker)");
  std::erase_if(waiting_, [&](const std::shared_ptr<PendingPublish>& pending) {
    if (pending->deadline() > now)
      return false;
    finish(pending, PendingPublish::Result::timeout, unsent_detail);
    return true;
  });
  for (const auto& pending : exchanges_.take_expired(now)) {
    finish(pending, PendingPublish::Result::timeout,
           blocked_.load() ? std::string(kBlockedDetail)
                           : " (the broker did not answer whether exchange '" +
                                 pending->message().exchange + "' exists)");
  }
  // Timed out while blocked: sent before the block took hold, so the broker may still route it
  // once the alarm ends (the caller must not assume it was dropped).
  finish(confirms_.expire(
      now, blocked_.load() ? std::string(kBlockedDetail) +
                                 "; sent before the block, it may still be published after it"
                           : std::string()));
}

void PublisherConnection::send_waiting() {
  // Closing: whatever has not left fails at the loop's exit; a new publish would only hold it.
  if (blocked_.load() || confirm_channel_ != ChannelState::open || stop_requested())
    return;
  while (!waiting_.empty() && !stop_requested()) {
    auto pending = std::move(waiting_.front());
    waiting_.pop_front();
    if (pending->resolved())
      continue;
    if (auto why = why_unsendable(pending->message())) {
      finish(pending, PendingPublish::Result::nacked, ": it cannot be sent: " + *why);
      continue;
    }
    if (!exchanges_.known(pending->message().exchange)) {
      exchanges_.park(std::move(pending));
      continue;
    }
    publish_one(pending);
  }
  check_next_exchange();
}

void PublisherConnection::send_again(std::vector<std::shared_ptr<PendingPublish>> publishes) {
  waiting_.insert(waiting_.begin(), std::make_move_iterator(publishes.begin()),
                  std::make_move_iterator(publishes.end()));
}

void PublisherConnection::publish_one(const std::shared_ptr<PendingPublish>& pending) {
  const transport::OutboundMessage& message = pending->message();
  // A republished copy keeps every property and typed header of its original.
  const PublishProperties properties(message);
  const int status = guarded([&] {
    return amqp_basic_publish(connection()->state(), kPublishChannel, bytes_of(message.exchange),
                              bytes_of(message.routing_key), message.mandatory ? 1 : 0, 0,
                              properties.get(), bytes_of(message.body));
  });
  if (is_encoding_failure(status)) {
    // It would fail the same way on every connection; this one may hold half a message now.
    finish(pending, PendingPublish::Result::nacked, ": it cannot be sent: " + status_text(status));
    throw ConnectionLost("a publish could not be encoded (" + status_text(status) + ")");
  }
  if (status != AMQP_STATUS_OK) {
    waiting_.push_front(pending);  // not sent: try again on the next connection
    throw ConnectionLost("publish failed: " + status_text(status));
  }
  confirms_.sent(pending);
}

void PublisherConnection::set_blocked(bool blocked) {
  const bool was = blocked_.exchange(blocked);
  if (metrics_ != nullptr)
    metrics_->broker_blocked().Set(blocked ? 1 : 0);
  if (blocked && !was)
    observability::log_warn("the broker blocks publishing (memory or disk alarm)");
  if (!blocked && was)
    observability::log_info("the broker unblocked publishing");
}

// --- The watchdog thread ---

void PublisherConnection::watchdog() {
  const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(publish_timeout_);
  std::unique_lock lock(watchdog_mutex_);
  while (!watchdog_wake_.wait_for(lock, kWatchdogInterval, [&] { return watchdog_stopping_; })) {
    const std::int64_t started = socket_call_started_ns_.load();
    if (started == 0)
      continue;
    const std::int64_t now = now_ns();
    const std::int64_t close_deadline = close_deadline_ns_.load();
    const bool closing_late = close_deadline != 0 && now >= close_deadline;
    if (now - started < limit.count() && !closing_late)
      continue;
    const bool aborted = abort_socket_if([&] { return socket_call_started_ns_.load() == started; });
    if (aborted && closing_late) {
      observability::log_warn(
          "publisher: closing, and a call on the socket (a publish stuck in a "
          "blocked or dead connection) has not returned " +
          std::to_string(kPublisherCloseGrace.count()) +
          " ms later; shutting the socket down (what it was sending fails)");
    } else if (aborted) {
      observability::log_warn(
          "publisher: a publish has been stuck in the socket for longer "
          "than publish_timeout; aborting the connection");
    }
  }
}

}  // namespace warren::broker
