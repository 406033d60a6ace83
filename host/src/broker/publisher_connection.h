// Publishing with confirms on a connection of its own (the broker blocks publishing
// connections under memory or disk alarms; consuming must go on meanwhile).
//
// Callers on any thread send() and wait; one I/O thread (io_loop.h) owns the connection: it
// publishes (persistent, mandatory, message_id always set) on one confirm channel, reads
// basic.ack / basic.nack (possibly `multiple`) and basic.return, resolves each publish
// (confirm_tracker.h), fails those past their deadline, holds publishes back while the
// connection is blocked, and reconnects with backoff.
//
// One bad publish must not fail the others (issue 19, defect 2): a publish to a missing exchange
// makes the broker close the channel, and the confirms owed to every other publish on it are
// lost. So the first publish to an exchange on a connection waits for a passive declare of it on
// a second channel (exchange_checks.h): a missing exchange fails its own publishes there, and
// the confirm channel never sees them. When the broker closes the confirm channel all the same
// (the exchange deleted after its check, a write not permitted), only that channel is reopened,
// at once, and only the publishes it may have taken are failed (ConfirmTracker::channel_closed);
// the connection, the backoff and every other publish stay. Channels are opened and exchanges
// checked without waiting for the answers: the I/O thread never stalls on them (nor hangs on a
// blocked connection, which the broker no longer reads).
//
// A watchdog shuts the socket down when a socket call hangs: amqp_basic_publish on a dead peer
// (rabbitmq-c 0.11, issue 780) or on a connection the broker blocked in the middle of a large
// body (memory alarm) after publish_timeout, and any call still running kPublisherCloseGrace after
// close() began (issue 19, defect 4), so that close() always returns.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "broker/confirm_tracker.h"
#include "broker/exchange_checks.h"
#include "broker/io_loop.h"
#include "broker/pending_publish.h"
#include "broker/wakeup_queue.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "transport/transport.h"

namespace warren::broker {

struct PublisherOptions : IoLoopOptions {
  std::chrono::milliseconds publish_timeout{10000};
};

// How long close() lets the I/O thread finish a socket call (a publish, the close handshake)
// before it shuts the socket down: whatever is unconfirmed fails at close anyway.
inline constexpr std::chrono::milliseconds kPublisherCloseGrace{1000};

class PublisherConnection final : public transport::Publisher, private IoLoop {
 public:
  using IoLoop::set_credentials;
  // Throws std::invalid_argument without endpoints.
  PublisherConnection(PublisherOptions options, observability::Metrics* metrics,
                      observability::Health* health);
  ~PublisherConnection() override;
  PublisherConnection(const PublisherConnection&) = delete;
  PublisherConnection& operator=(const PublisherConnection&) = delete;

  // Queues a publish; the result arrives in the returned object. Never blocks. After close(), the
  // result is `unavailable` at once.
  std::shared_ptr<PendingPublish> send(transport::OutboundMessage message);
  // send() and wait: returns when confirmed, throws runtime::PublishError otherwise.
  void publish(const transport::OutboundMessage& message) override;

  // Fails what is still waiting or unconfirmed (unavailable), closes the connection and stops
  // the threads, within about kPublisherCloseGrace even when a publish is stuck in the socket. The
  // object stays valid for threads that still call send() (a handler past the shutdown timeout).
  // Idempotent; call it from one thread.
  void close();

  using IoLoop::connected;
  bool blocked() const noexcept { return blocked_.load(); }

 private:
  // A channel of the connection, as the I/O thread drives it without waiting for the broker.
  enum class ChannelState { closed, opening, selecting, open };

  // IoLoop hooks.
  void service_commands() override;
  bool commands_waiting() const override { return !requests_.empty(); }
  void prepare_connection(AmqpConnection& connection) override;
  void on_connected() override;
  void on_connect_failed(const std::string& why, bool refused,
                         std::chrono::milliseconds retry_in) override;
  void service_connection() override;
  void on_frame(const amqp_frame_t& frame) override;
  void on_channel_closed(ChannelNumber channel, int reply_code,
                         const std::string& reply_text) override;
  void on_connection_lost(const std::string& why) override;
  void on_loop_exit() override;

  // Publishing (publisher_connection.cc).
  void send_waiting();
  void publish_one(const std::shared_ptr<PendingPublish>& pending);
  void send_again(std::vector<std::shared_ptr<PendingPublish>> publishes);
  void set_blocked(bool blocked);
  void expire_deadlines();
  void finish(const std::shared_ptr<PendingPublish>& pending, PendingPublish::Result result,
              std::string detail = {});
  void finish(std::vector<ConfirmTracker::Verdict> verdicts);

  // The channels (publisher_channels.cc).
  void on_confirm_channel_frame(const amqp_frame_t& frame);
  void on_check_channel_frame(const amqp_method_t& method);
  void on_returned(const amqp_frame_t& frame);
  void on_confirm_channel_closed(int reply_code, const std::string& reply_text);
  void on_check_refused(int reply_code, const std::string& reply_text);
  void check_next_exchange();
  void send_method(ChannelNumber channel, amqp_method_number_t method, void* decoded,
                   const char* what);
  void acknowledge_channel_close(ChannelNumber channel);

  // The watchdog thread.
  template <class Call>
  auto guarded(Call&& call);
  void watchdog();

  const std::chrono::milliseconds publish_timeout_;
  observability::Metrics* metrics_;

  WakeupQueue<std::shared_ptr<PendingPublish>> requests_;
  std::atomic<bool> blocked_{false};

  // I/O thread state.
  std::deque<std::shared_ptr<PendingPublish>> waiting_;  // not yet sent
  ConfirmTracker confirms_;                              // sent, not yet confirmed
  ExchangeChecks exchanges_;                             // parked until their exchange is checked
  ChannelState confirm_channel_ = ChannelState::closed;
  ChannelState check_channel_ = ChannelState::closed;

  // Watchdog: when the I/O thread's current socket call started (0 when none is running), and
  // when close() gives up waiting for one (0 before close()).
  std::atomic<std::int64_t> socket_call_started_ns_{0};
  std::atomic<std::int64_t> close_deadline_ns_{0};
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  bool watchdog_stopping_ = false;  // guarded by watchdog_mutex_
  std::thread watchdog_thread_;
};

template <class Call>
auto PublisherConnection::guarded(Call&& call) {
  struct Finished {
    std::atomic<std::int64_t>& started;
    ~Finished() { started = 0; }
  };
  socket_call_started_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
  const Finished finished{socket_call_started_ns_};
  return call();
}

// Why no broker could ever take `message` (a name, key or id longer than an AMQP short string),
// or nullopt. Checked before sending: rabbitmq-c finds out only while encoding, and retrying on a
// new connection would fail the same way until the publish timed out.
std::optional<std::string> why_unsendable(const transport::OutboundMessage& message);

// The exchange a channel.close reply text names ("NOT_FOUND - no exchange 'x' in vhost '/'",
// "ACCESS_REFUSED - access to exchange 'x' in vhost '/' refused for user 'u'"), or nullopt.
std::optional<std::string> exchange_named_in(const std::string& reply_text);

}  // namespace warren::broker
