// Publishing with confirms on a connection of its own (the broker blocks publishing
// connections under memory or disk alarms; consuming must go on meanwhile).
//
// Callers on any thread send() and wait; one I/O thread (io_loop.h) owns the connection: it
// publishes (persistent, mandatory, message_id always set) on one confirm channel, reads
// basic.ack / basic.nack (possibly `multiple`) and basic.return, resolves each publish
// (confirm_tracker.h), fails those past their deadline, holds publishes back while the
// connection is blocked, and reconnects with backoff. A watchdog aborts the socket when
// amqp_basic_publish hangs on a dead peer (rabbitmq-c 0.11, issue 780).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "broker/confirm_tracker.h"
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

class PublisherConnection final : public transport::Publisher, private IoLoop {
 public:
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
  // the threads. The object stays valid for threads that still call send() (a handler past the
  // shutdown timeout). Idempotent; call it from one thread.
  void close();

  using IoLoop::connected;
  bool blocked() const noexcept { return blocked_.load(); }

 private:
  // IoLoop hooks.
  void service_commands() override;
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

  void send_waiting();
  void publish_one(const std::shared_ptr<PendingPublish>& pending);
  void on_returned(const amqp_frame_t& frame);
  void set_blocked(bool blocked);
  void expire_deadlines();
  void finish(const std::shared_ptr<PendingPublish>& pending, PendingPublish::Result result,
              std::string detail = {});
  void finish(std::vector<ConfirmTracker::Verdict> verdicts);
  void fail_everything(const std::string& detail);
  void watchdog();

  const std::chrono::milliseconds publish_timeout_;
  observability::Metrics* metrics_;

  WakeupQueue<std::shared_ptr<PendingPublish>> requests_;
  std::atomic<bool> blocked_{false};

  // I/O thread state.
  std::deque<std::shared_ptr<PendingPublish>> waiting_;  // not yet sent
  ConfirmTracker confirms_;                              // sent, not yet confirmed

  // Watchdog: when the current amqp_basic_publish started (0 when none is running).
  std::atomic<std::int64_t> publish_started_ns_{0};
  std::thread watchdog_thread_;
};

// Why no broker could ever take `message` (a name, key or id longer than an AMQP short string),
// or nullopt. Checked before sending: rabbitmq-c finds out only while encoding, and retrying on a
// new connection would fail the same way until the publish timed out.
std::optional<std::string> why_unsendable(const transport::OutboundMessage& message);

// The exchange a channel.close reply text says is missing ("NOT_FOUND - no exchange 'x' in vhost
// '/'"), or nullopt.
std::optional<std::string> missing_exchange_in(const std::string& reply_text);

}  // namespace warren::broker
