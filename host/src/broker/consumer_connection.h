// The consuming side of the RabbitMQ transport: one connection, owned by one I/O thread, with a
// channel per subscription (basic.qos prefetch, manual acks).
//
// The I/O thread connects (hosts tried in turn, exponential backoff with jitter), declares the
// topology, subscribes every worker, then loops: apply settlements queued by worker threads
// (contiguous acks coalesced into one `multiple` ack, never covering an unsettled delivery), read
// every available frame (deliveries, broker-side cancels, channel/connection closes), and sleep
// until the socket or the settlement queue wakes it, at most min(50 ms, heartbeat / 4).
//
// Each connection is an incarnation: a delivery carries the incarnation it came on, and a
// settlement for an older incarnation is dropped and counted (its delivery tag means nothing on
// the new channel; the broker redelivers the message).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/backoff.h"
#include "broker/broker_endpoint.h"
#include "broker/topology.h"
#include "broker/wakeup_queue.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "runtime/transport.h"

namespace warren::broker {

// Identifies one delivery on one channel incarnation.
struct DeliveryToken {
  std::uint64_t incarnation = 0;
  std::size_t subscription = 0;
  std::uint64_t tag = 0;
};

enum class SettleAction { ack, requeue, reject };

struct ConsumerOptions {
  std::vector<BrokerEndpoint> endpoints;
  ConnectionOptions connection;
  std::chrono::milliseconds reconnect_initial{500};
  std::chrono::milliseconds reconnect_max{30000};
  // Pause between the last ack and channel.close (RabbitMQ 3.10 quorum queues can drop acks
  // still in flight at close: rabbitmq-server issue 10327).
  std::chrono::milliseconds close_grace{150};
};

class ConsumerConnection {
 public:
  // Called on the I/O thread for each delivery: `queue` is the name on the broker.
  using DeliveryCallback = std::function<void(
      const DeliveryToken& token, runtime::InboundMessage message, const std::string& queue)>;

  ConsumerConnection(ConsumerOptions options, const config::Config& config,
                     std::vector<runtime::Subscription> subscriptions, DeliveryCallback on_delivery,
                     observability::Metrics* metrics, observability::Health* health);
  ~ConsumerConnection();
  ConsumerConnection(const ConsumerConnection&) = delete;
  ConsumerConnection& operator=(const ConsumerConnection&) = delete;

  // Starts the I/O thread and waits for the first connection and setup (up to the connect
  // timeout). Throws TopologyError when the broker refuses the topology. When the broker is
  // unreachable it returns anyway and keeps trying in the background (not ready meanwhile).
  void start();
  // basic.cancel on every subscription; deliveries already received still arrive.
  void stop_consuming();
  // Applies every queued settlement, makes sure the broker processed them, closes, joins.
  void close();

  // Connected and every subscription consuming.
  bool ready() const noexcept { return ready_.load(); }
  std::uint64_t incarnation() const noexcept { return incarnation_.load(); }

  // From any thread.
  void settle(const DeliveryToken& token, SettleAction action);

 private:
  struct Command {
    enum class Kind { settle, cancel, close } kind = Kind::settle;
    DeliveryToken token;
    SettleAction action = SettleAction::ack;
    std::shared_ptr<std::promise<void>> done;
  };
  struct Channel {
    runtime::Subscription subscription;
    amqp_channel_t id = 0;
    std::string queue;                    // the name on the broker
    std::string consumer_tag;             // empty while not consuming
    std::set<std::uint64_t> outstanding;  // delivered, not settled
    std::vector<std::uint64_t> acked;     // settled by ack since the last flush
    std::chrono::steady_clock::time_point resubscribe_at{};
  };

  void run();
  void connect_and_setup();
  void subscribe(Channel& channel);
  void teardown(const std::string& why);
  void apply(std::vector<Command> commands);
  void apply_one(const Command& command);
  void flush_acks(Channel& channel);
  void on_frame(const amqp_frame_t& frame);
  void on_delivery(Channel& channel, const amqp_frame_t& frame);
  void resubscribe_cancelled();
  void cancel_all();
  void close_gracefully();
  void update_ready();
  Channel* channel_by_id(amqp_channel_t id);
  void run_control(Command::Kind kind);

  const ConsumerOptions options_;
  const config::Config& config_;
  const TopologyDeclarer topology_;
  DeliveryCallback on_delivery_;
  observability::Metrics* metrics_;
  std::shared_ptr<observability::LoopHeartbeat> heartbeat_;

  WakeupQueue<Command> commands_;
  std::atomic<bool> ready_{false};
  std::atomic<std::uint64_t> incarnation_{0};
  std::atomic<bool> stopping_{false};

  // I/O thread state.
  std::unique_ptr<AmqpConnection> connection_;
  std::vector<Channel> channels_;
  bool cancelled_ = false;  // stop_consuming() ran: do not subscribe again
  bool closed_ = false;
  std::size_t endpoint_index_ = 0;
  ReconnectBackoff backoff_;
  std::chrono::steady_clock::time_point next_connect_attempt_{};

  // First setup result, for start().
  std::mutex first_setup_mutex_;
  std::condition_variable first_setup_cv_;
  bool first_setup_done_ = false;
  std::string first_setup_topology_error_;

  std::thread thread_;
};

}  // namespace warren::broker
