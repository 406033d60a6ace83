// Publishing with confirms on a connection of its own (the broker blocks publishing
// connections under memory or disk alarms; consuming must go on meanwhile).
//
// Callers on any thread send() and wait; one I/O thread owns the connection: it publishes
// (persistent, mandatory, message_id always set), reads basic.ack / basic.nack (possibly
// `multiple`) and basic.return, resolves each publish, fails those past their deadline, holds
// publishes back while the connection is blocked, and reconnects with backoff. A watchdog
// aborts the socket when amqp_basic_publish hangs on a dead peer (rabbitmq-c 0.11, issue 780).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/backoff.h"
#include "broker/broker_endpoint.h"
#include "broker/pending_publish.h"
#include "broker/wakeup_queue.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "runtime/transport.h"

namespace warren::broker {

struct PublisherOptions {
  std::vector<BrokerEndpoint> endpoints;
  ConnectionOptions connection;
  std::chrono::milliseconds publish_timeout{10000};
  std::chrono::milliseconds reconnect_initial{500};
  std::chrono::milliseconds reconnect_max{30000};
};

class PublisherConnection final : public runtime::Publisher {
 public:
  PublisherConnection(PublisherOptions options, observability::Metrics* metrics,
                      observability::Health* health);
  ~PublisherConnection() override;
  PublisherConnection(const PublisherConnection&) = delete;
  PublisherConnection& operator=(const PublisherConnection&) = delete;

  // Queues a publish; the result arrives in the returned object. Never blocks. After close(), the
  // result is `unavailable` at once.
  std::shared_ptr<PendingPublish> send(runtime::OutboundMessage message);
  // send() and wait: returns when confirmed, throws runtime::PublishError otherwise.
  void publish(const runtime::OutboundMessage& message) override;

  // Fails what is still waiting or unconfirmed (unavailable), closes the connection and stops
  // the threads. The object stays valid for threads that still call send() (a handler past the
  // shutdown timeout). Idempotent; call it from one thread.
  void close();

  bool connected() const noexcept { return connected_.load(); }
  bool blocked() const noexcept { return blocked_.load(); }

 private:
  struct InFlight {
    std::shared_ptr<PendingPublish> publish;
    bool returned = false;
    std::string return_text;
  };

  void run();
  void connect();
  void teardown(const std::string& why);
  void send_waiting();
  void publish_one(const std::shared_ptr<PendingPublish>& pending);
  void on_frame(const amqp_frame_t& frame);
  void confirm(std::uint64_t tag, bool multiple, PendingPublish::Result result);
  void expire_deadlines();
  void refuse_publishes_to_missing_exchange(const std::string& reply_text);
  void finish(const std::shared_ptr<PendingPublish>& pending, PendingPublish::Result result,
              std::string detail = {});
  void watchdog();

  const PublisherOptions options_;
  observability::Metrics* metrics_;
  std::shared_ptr<observability::LoopHeartbeat> heartbeat_;

  WakeupQueue<std::shared_ptr<PendingPublish>> requests_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> connected_{false};
  std::atomic<bool> blocked_{false};

  // I/O thread state.
  std::unique_ptr<AmqpConnection> connection_;
  std::mutex connection_mutex_;  // guards connection_ swaps against the watchdog
  std::deque<std::shared_ptr<PendingPublish>> waiting_;  // not yet sent
  std::map<std::uint64_t, InFlight> in_flight_;          // sent, by confirm sequence number
  std::uint64_t next_sequence_ = 1;
  std::size_t endpoint_index_ = 0;
  ReconnectBackoff backoff_;
  std::chrono::steady_clock::time_point next_connect_attempt_{};

  // Watchdog: when the current amqp_basic_publish started (0 when none is running).
  std::atomic<std::int64_t> publish_started_ns_{0};

  std::thread io_thread_;
  std::thread watchdog_thread_;
};

// Why no broker could ever take `message` (a name, key or id longer than an AMQP short string),
// or nullopt. Checked before sending: rabbitmq-c finds out only while encoding, and retrying on a
// new connection would fail the same way until the publish timed out.
std::optional<std::string> why_unsendable(const runtime::OutboundMessage& message);

}  // namespace warren::broker
