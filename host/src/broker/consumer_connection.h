// The consuming side of the RabbitMQ transport: one connection, owned by one I/O thread
// (io_loop.h), with a channel per subscription (basic.qos prefetch, manual acks).
//
// At the first connection it declares the topology, then subscribes every worker. After a
// reconnect it subscribes first and declares everything again behind it, on a connection of its
// own (topology_refresher.h): on a cluster with a frozen member a declaration waits for that
// member, consuming does not (issue 21). Only a queue that belongs to the connection (exclusive,
// server-named) is declared again before its worker consumes: it went with the old connection.
// A queue deleted meanwhile shows as a refused basic.consume, and that worker alone declares it
// again before its next attempt (see below). Then every turn it
// applies the settlements worker threads queued (acks held and coalesced into one `multiple` ack,
// never covering an unsettled delivery: ack_ledger.h) and reads every available frame
// (deliveries, broker-side cancels, channel and connection closes).
//
// A channel incarnation ends with its channel (closed by the broker) or its connection: a delivery
// carries the incarnation it came on, and a settlement for an older one is dropped and counted
// (its delivery tag means nothing on the new channel; the broker redelivers the message).
//
// What happens to one worker's subscription stays with that worker (issue 19, defect 5): the
// broker cancelling its consumer (its queue deleted), refusing its queue (an externally managed
// queue that no longer exists: the passive declare's 404 closes only the channel it ran on) or
// closing its channel (a consumer_timeout) stops that worker alone. It is reported not ready with
// the reason (logged once) and tried again on a backoff of its own (subscriber_state.h), while
// the other workers' channels, deliveries and acks are untouched. Only at start does a refused
// queue fail start(), as a refused topology does.
//
// A settlement may be held back for a while (a requeue after a backoff: deferred_settlements.h,
// issue 19, defects 1 and 6), and the retry routes (the delay levels and a worker's delivery
// binding) can be declared again on request, when a retry came back unroutable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/ack_ledger.h"
#include "broker/deferred_settlements.h"
#include "broker/delivery_assembler.h"
#include "broker/io_loop.h"
#include "broker/subscriber_state.h"
#include "broker/topology.h"
#include "broker/topology_refresher.h"
#include "broker/wakeup_queue.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "transport/transport.h"

namespace warren::broker {

struct ConsumerOptions : IoLoopOptions {
  // Pause between the last ack and channel.close (RabbitMQ 3.10 quorum queues can drop acks
  // still in flight at close: rabbitmq-server issue 10327).
  std::chrono::milliseconds close_grace{150};
};

class ConsumerConnection final : private IoLoop {
 public:
  // Called on the I/O thread for each delivery: `queue` is the name on the broker.
  using DeliveryCallback = std::function<void(
      const DeliveryToken& token, transport::InboundMessage message, const std::string& queue)>;

  // Throws std::invalid_argument without endpoints.
  ConsumerConnection(ConsumerOptions options, const config::Config& config,
                     std::vector<transport::Subscription> subscriptions,
                     DeliveryCallback on_delivery, observability::Metrics* metrics,
                     observability::Health* health);
  ~ConsumerConnection() override;  // abandons the connection: the broker requeues what is unacked
  ConsumerConnection(const ConsumerConnection&) = delete;
  ConsumerConnection& operator=(const ConsumerConnection&) = delete;

  // Called on the I/O thread after each pass over the frames the socket had (also when the pass
  // ends in a lost connection), so that the deliveries of one pass can be handed over together.
  // Set before start().
  void on_read_pass_end(std::function<void()> callback) { on_read_pass_end_ = std::move(callback); }
  // Before start(): the I/O thread's work between turns (io_loop.h), and whether the turn running
  // now (the pass that just ended) runs on the stand-in, which does not help.
  using IoLoop::set_helper;
  using IoLoop::standing_in;

  // Starts the I/O thread and waits for the first connection and setup (up to the connect
  // timeout). Throws TopologyError when the broker refuses the topology. When the broker is
  // unreachable it returns anyway and keeps trying in the background (not ready meanwhile).
  void start();
  using IoLoop::set_credentials;
  // basic.cancel on every subscription; deliveries already received still arrive.
  void stop_consuming();
  // basic.cancel on `worker`'s subscription alone, which is never subscribed again (a reload
  // removed or replaced the worker); its channel stays open for the settlements still due.
  void stop_consuming(const std::string& worker);
  // Applies every queued settlement, makes sure the broker processed them, closes, joins (not a
  // thread still in a handler it helps with: IoLoop::stop_loop_unless_helping()).
  void close();

  // Connected and every subscription consuming.
  bool ready() const noexcept { return ready_.load(); }
  // From any thread: why it is not ready, a line each (empty when ready): not connected, or, for
  // each worker not consuming, why (its queue missing, its channel closed by the broker...).
  std::vector<std::string> not_ready_reasons() const;
  // From any thread: whether `token`'s channel incarnation is still the current one.
  bool is_current(const DeliveryToken& token) const noexcept { return ledger_.is_current(token); }

  // From any thread. With `after`, the delivery stays unacked (in its prefetch slot) that long
  // first; close() sends such a settlement at once. `wake` false: the I/O thread takes it at its
  // next turn, not woken for it (WakeupQueue::push; transport::Delivery::settle_soon).
  void settle(const DeliveryToken& token, SettleAction action,
              std::chrono::milliseconds after = std::chrono::milliseconds(0), bool wake = true);
  // From any thread: declares the retry delay levels and the delivery binding of `subscription`'s
  // queue again, on the I/O thread (at most once a second; requests in between are dropped, as
  // the repair just done covers them). A retry publish came back unroutable: someone deleted or
  // unbound part of them.
  void repair_retry_routes(std::size_t subscription);

 private:
  struct Command {
    enum class Kind { settle, cancel, cancel_one, close, repair_retry_routes } kind = Kind::settle;
    DeliveryToken token;  // settle; repair_retry_routes, cancel_one: only its subscription
    SettleAction action = SettleAction::ack;
    DeferredSettlements::Clock::time_point due{};  // settle: not before
    std::shared_ptr<std::promise<void>> done;
  };
  // IoLoop hooks.
  void service_commands() override;
  bool commands_waiting() const override { return !commands_.empty(); }
  bool wants_connection() const override { return !cancelled_; }
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

  bool prepare_queue(AmqpConnection& connection, std::size_t index,
                     const TopologyDeclarer::QueueNames& declared);
  bool try_subscribe(std::size_t index);
  void subscribe(std::size_t index);
  void lose_channel(std::size_t index);
  void subscription_failed(std::size_t index, const std::string& reason);
  void apply(std::vector<Command>& commands);
  void apply_one(const Command& command);
  void settle_now(const DeliveryToken& token, SettleAction action);
  void settle_deferred(const std::vector<DeferredSettlements::Entry>& entries);
  void repair_retry_routes_now(const std::vector<std::size_t>& subscriptions);
  // Sends the acks the ledger holds; `everything`: the singles it may still hold too.
  void flush_acks(bool everything = false);
  // A delivery whose frames have all arrived: handed to the runtime under a fresh token.
  void on_delivery(std::size_t index, DeliveryAssembler::Assembled delivery);
  void on_cancelled(const std::string& consumer_tag);
  void retry_due_subscriptions();
  void stop_subscribing();
  void cancel_all();
  // Cancels the consumer of subscriber `index` when it consumes (not its channel).
  void cancel_consumer(std::size_t index);
  void close_gracefully();
  void update_ready();
  static Command control(Command::Kind kind);
  // Hands `command` to the I/O thread and waits for it to be done.
  void run_control(Command command);
  void retire(std::size_t index);
  // warren_broker_connected (Metrics::consumer_connection_*): this connection's part in it.
  void count_up(bool up);
  void count_closed();
  void first_setup_done(const std::string& topology_error);
  bool first_setup_pending();

  const std::chrono::milliseconds close_grace_;
  const TopologyDeclarer topology_;
  TopologyRefresher refresher_;  // after topology_: destroyed (joined) before it
  DeliveryCallback on_delivery_;
  std::function<void()> on_read_pass_end_;
  observability::Metrics* metrics_;

  WakeupQueue<Command> commands_;
  std::vector<Command> taken_commands_;  // service_commands(): the turn's, reused
  std::atomic<bool> ready_{false};
  AckLedger ledger_;             // one channel per subscription
  DeliveryAssembler assembler_;  // the delivery in progress on each subscription's channel

  // Written by the I/O thread (update_ready()), read by /readyz.
  mutable std::mutex reasons_mutex_;
  std::vector<std::string> not_ready_reasons_{"not connected to the broker yet"};

  // I/O thread state.
  std::vector<SubscriberState> subscribers_;  // index i consumes on consumer_channel(i)
  std::vector<bool> prepared_;                // by the last prepare_connection(): queue ready
  std::vector<bool> owned_by_connection_;     // per subscription: exclusive or server-named queue
  bool declared_once_ = false;                // the whole topology was declared (at start)
  bool resumed_ = false;                      // this connection consumed before declaring
  DeferredSettlements deferred_;              // settlements held back until their time
  std::chrono::steady_clock::time_point last_route_repair_{};
  bool cancelled_ = false;   // stop_consuming() ran: do not subscribe again
  bool counted_up_ = false;  // counted as connected in warren_broker_connected
  std::atomic<bool> counted_open_{false};

  // First setup result, for start().
  std::mutex first_setup_mutex_;
  std::condition_variable first_setup_cv_;
  bool first_setup_done_ = false;
  std::string first_setup_topology_error_;
};

}  // namespace warren::broker
