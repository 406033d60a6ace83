// The consuming connection against the test broker (test_broker.h), counted on the broker's
// side: acks coalesced by the ledger never ack a delivery that is still being handled (after
// close, exactly the unsettled one is back in the queue), a requeue comes back redelivered and a
// reject is gone, a requeue after a backoff waits for it (and a close sends it at once), nothing
// is delivered after stop_consuming(), a topology the broker refuses fails start(), and a
// worker's retry routes unbound are bound again on request.
#include <amqp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/consumer_connection.h"
#include "broker/delay_levels.h"
#include "broker/publisher_connection.h"
#include "eventually.h"
#include "freezing_proxy.h"
#include "test_broker.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;

constexpr auto kPatience = 20s;

ConnectionOptions connection_options() {
  ConnectionOptions options;
  options.connect_timeout = 5s;
  return options;
}

// A connection of the test's own, to look at and delete the test's queue.
class QueueProbe {
 public:
  QueueProbe(const BrokerEndpoint& endpoint, std::string queue)
      : connection_(AmqpConnection::open(endpoint, connection_options())),
        queue_(std::move(queue)) {
    amqp_channel_open(connection_->state(), 1);
    connection_->check(connection_->last_reply(), "opening the probe's channel");
  }
  ~QueueProbe() {
    amqp_queue_delete(connection_->state(), 1, bytes_of(queue_), 0, 0);
    connection_->close();
  }

  // Ready messages in the queue (not those delivered and unacked).
  std::uint32_t ready_messages() {
    amqp_queue_declare_ok_t* ok =
        amqp_queue_declare(connection_->state(), 1, bytes_of(queue_), 1, 0, 0, 0, amqp_empty_table);
    connection_->check(connection_->last_reply(), "counting the queue's messages");
    return ok->message_count;
  }

  // Waits until the queue holds `count` ready messages; the count then.
  std::uint32_t wait_for_ready_messages(std::uint32_t count) {
    std::uint32_t now = 0;
    // Polling the broker: nothing to wait on.
    ::warren::test_support::eventually([&] { return (now = ready_messages()) == count; }, kPatience,
                                       20ms);
    return now;
  }

  void delete_queue() {
    amqp_queue_delete(connection_->state(), 1, bytes_of(queue_), 0, 0);
    connection_->check(connection_->last_reply(), "deleting the queue");
  }

  // Removes what brings the queue's retries back from the delay levels.
  void unbind_retry_delivery() {
    amqp_queue_unbind(connection_->state(), 1, bytes_of(queue_),
                      amqp_cstring_bytes(kDelayDeliveryExchange.data()),
                      bytes_of(delay_delivery_pattern(queue_)), amqp_empty_table);
    connection_->check(connection_->last_reply(), "unbinding the queue from the delay levels");
  }

  void declare_classic() {
    amqp_queue_declare(connection_->state(), 1, bytes_of(queue_), 0, 0, 0, 0, amqp_empty_table);
    connection_->check(connection_->last_reply(), "declaring the queue");
  }

 private:
  std::unique_ptr<AmqpConnection> connection_;
  std::string queue_;
};

// What the consumer received, in order.
struct Received {
  DeliveryToken token;
  transport::InboundMessage message;
};

class Inbox {
 public:
  ConsumerConnection::DeliveryCallback callback() {
    return
        [this](const DeliveryToken& token, transport::InboundMessage message, const std::string&) {
          std::lock_guard lock(mutex_);
          received_.push_back({token, std::move(message)});
          arrived_.notify_all();
        };
  }
  // Waits for `count` deliveries in all; all of them (fewer after the patience ran out).
  std::vector<Received> wait_for(std::size_t count) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, kPatience, [&] { return received_.size() >= count; });
    return received_;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return received_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<Received> received_;
};

// A classic queue of the test's own, declared by the consumer from the config.
struct Fixture {
  std::vector<BrokerEndpoint> endpoints;
  std::string queue = "warren.unit.consumer." + transport::random_hex(6);
  config::Config config;
  QueueProbe probe;

  explicit Fixture(std::vector<BrokerEndpoint> test_endpoints,
                   config::QueueType type = config::QueueType::classic)
      : endpoints(std::move(test_endpoints)), probe(endpoints.front(), queue) {
    config::QueueConfig declared;
    declared.name = queue;
    declared.type = type;
    declared.durable = false;
    config.queues.push_back(declared);
  }

  // Consuming through `via` (default: the endpoints the fixture publishes to).
  // `callback`: instead of the inbox's own.
  std::unique_ptr<ConsumerConnection> consumer(Inbox& inbox, std::uint16_t prefetch = 20,
                                               std::vector<BrokerEndpoint> via = {},
                                               ConsumerConnection::DeliveryCallback callback = {}) {
    ConsumerOptions options;
    options.endpoints = via.empty() ? endpoints : std::move(via);
    options.connection = connection_options();
    options.reconnect_initial = 50ms;
    options.reconnect_max = 200ms;
    transport::Subscription subscription;
    subscription.worker = "unit";
    subscription.queue = queue;
    subscription.prefetch = prefetch;
    return std::make_unique<ConsumerConnection>(
        std::move(options), config, std::vector<transport::Subscription>{subscription},
        callback ? std::move(callback) : inbox.callback(), nullptr, nullptr);
  }

  void publish(const std::vector<std::string>& bodies, const std::string& exchange = {},
               const std::string& routing_key = {}) {
    PublisherOptions options;
    options.endpoints = endpoints;
    options.connection = connection_options();
    PublisherConnection publisher(std::move(options), nullptr, nullptr);
    for (const auto& body : bodies) {
      transport::OutboundMessage message;
      message.exchange = exchange;
      message.routing_key = routing_key.empty() ? queue : routing_key;  // default: the queue
      message.body = body;
      message.persistent = false;
      publisher.publish(message);
    }
  }

  // A retry's last hop, as the delay levels' last queue dead-letters it.
  void publish_as_retry(const std::string& body) {
    publish({body}, std::string(kDelayDeliveryExchange), delay_routing_key(0ms, queue));
  }

  // publish_as_retry() again and again until the broker routes it (its route being declared
  // again on another thread); false when it never did within the patience.
  bool publish_as_retry_until_routed(const std::string& body) {
    return ::warren::test_support::eventually(
        [&] {
          try {
            publish_as_retry(body);
            return true;
          } catch (const transport::PublishError&) {
            return false;
          }
        },
        kPatience, 50ms);
  }
};

// A LoopHelper (io_loop.h) whose first help holds the I/O thread until released.
class HoldingHelper final : public LoopHelper {
 public:
  // On the thread running the loop: help after this turn.
  void want_help() { wanted_ = true; }
  bool begin_help() override { return std::exchange(wanted_, false); }
  void help(const std::function<bool()>& enough) override {
    if (helps_.fetch_add(1) > 0)
      return;
    // Polls: enough() has nothing to wait on.
    const bool taken_over = ::warren::test_support::eventually(enough, kPatience, 1ms);
    std::unique_lock lock(mutex_);
    taken_over_ = taken_over;
    holding_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, kPatience, [&] { return released_; });
    holding_ = false;
  }
  void stood_in() override { stood_in_.fetch_add(1); }

  // Whether the help holds the I/O thread now, with the stand-in covering for it.
  bool wait_until_held() {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, kPatience, [&] { return holding_; });
    return holding_ && taken_over_;
  }
  bool holding() {
    std::lock_guard lock(mutex_);
    return holding_;
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  int stood_in_count() const { return stood_in_.load(); }

 private:
  bool wanted_ = false;  // the loop's
  std::atomic<int> helps_{0};
  std::atomic<int> stood_in_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool taken_over_ = false;
  bool holding_ = false;
  bool released_ = false;
};

// Issue 17: while the I/O thread helps (runs handlers) longer than a tick, the stand-in runs the
// loop. At prefetch 2 with the first message unsettled, ten more arrive one at a time only if
// the stand-in both reads them and sends the acks of those before.
TEST(ConsumerOnBroker, HelpHoldsTheIoThread_TheStandInReadsAndAcksMeanwhile) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);
  Inbox inbox;
  HoldingHelper helper;
  ConsumerConnection* connection = nullptr;
  std::vector<bool> on_stand_in;  // per delivery: read by the stand-in
  auto to_inbox = inbox.callback();
  auto consumer = fixture.consumer(
      inbox, 2, {},
      [&](const DeliveryToken& token, transport::InboundMessage message, const std::string& queue) {
        on_stand_in.push_back(connection->standing_in());
        if (message.body == "first")
          helper.want_help();
        to_inbox(token, std::move(message), queue);
      });
  connection = consumer.get();
  consumer->set_helper(&helper);
  consumer->start();
  fixture.publish({"first"});
  const auto first = inbox.wait_for(1);
  ASSERT_EQ(first.size(), 1U);
  ASSERT_TRUE(helper.wait_until_held()) << "the stand-in did not take the loop over";
  EXPECT_EQ(helper.stood_in_count(), 1);

  std::vector<std::string> bodies;
  for (int i = 0; i < 10; ++i)
    bodies.push_back("m" + std::to_string(i));
  fixture.publish(bodies);
  for (std::size_t count = 2; count <= 11; ++count) {
    const auto received = inbox.wait_for(count);
    ASSERT_EQ(received.size(), count) << "the stand-in stopped reading or acking";
    EXPECT_EQ(received.back().message.body, bodies[count - 2]);
    consumer->settle(received.back().token, SettleAction::ack);
  }
  EXPECT_TRUE(helper.holding());
  helper.release();
  consumer->settle(first[0].token, SettleAction::ack);
  consumer->close();
  EXPECT_EQ(fixture.probe.wait_for_ready_messages(0), 0U);
  ASSERT_EQ(on_stand_in.size(), 11U);
  EXPECT_FALSE(on_stand_in[0]);
  EXPECT_EQ(std::count(on_stand_in.begin() + 1, on_stand_in.end(), true), 10);
}

TEST(ConsumerOnBroker, AllButOneAcked_AfterCloseExactlyTheUnsettledOneIsBack) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);
  Inbox inbox;
  auto consumer = fixture.consumer(inbox);
  consumer->start();
  ASSERT_TRUE(consumer->ready());
  fixture.publish({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"});
  const auto received = inbox.wait_for(10);
  ASSERT_EQ(received.size(), 10U);

  // Newest first, and "3" still being handled: no `multiple` ack may cover it.
  for (auto it = received.rbegin(); it != received.rend(); ++it) {
    EXPECT_TRUE(consumer->is_current(it->token));
    if (it->message.body != "3")
      consumer->settle(it->token, SettleAction::ack);
  }
  consumer->close();
  EXPECT_EQ(fixture.probe.wait_for_ready_messages(1), 1U);

  Inbox again;
  auto second = fixture.consumer(again);
  second->start();
  const auto back = again.wait_for(1);
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(back[0].message.body, "3");
  EXPECT_TRUE(back[0].message.redelivered);
  second->settle(back[0].token, SettleAction::ack);
  second->close();
  EXPECT_EQ(fixture.probe.wait_for_ready_messages(0), 0U);
  EXPECT_EQ(again.size(), 1U);
}

TEST(ConsumerOnBroker, RequeuedComesBackRedelivered_RejectedIsGone) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);
  Inbox inbox;
  auto consumer = fixture.consumer(inbox);
  consumer->start();
  fixture.publish({"keep", "drop"});
  const auto first = inbox.wait_for(2);
  ASSERT_EQ(first.size(), 2U);
  for (const auto& delivery : first) {
    consumer->settle(delivery.token, delivery.message.body == "keep" ? SettleAction::requeue
                                                                     : SettleAction::reject);
  }
  const auto all = inbox.wait_for(3);
  ASSERT_EQ(all.size(), 3U);
  EXPECT_EQ(all[2].message.body, "keep");
  EXPECT_TRUE(all[2].message.redelivered);
  consumer->settle(all[2].token, SettleAction::ack);
  consumer->close();
  EXPECT_EQ(fixture.probe.wait_for_ready_messages(0), 0U);
  EXPECT_EQ(inbox.size(), 3U);
}

// Issue 19, defects 1 and 6: a message whose republish failed is requeued after a backoff,
// unacked meanwhile, so that it does not come straight back to the handler.
TEST(ConsumerOnBroker, RequeueAfterABackoff_ComesBackNoSoonerAndACloseSendsItAtOnce) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);
  Inbox inbox;
  auto consumer = fixture.consumer(inbox);
  consumer->start();
  fixture.publish({"later"});
  const auto first = inbox.wait_for(1);
  ASSERT_EQ(first.size(), 1U);

  constexpr auto kBackoff = 400ms;
  const auto settled_at = std::chrono::steady_clock::now();
  consumer->settle(first[0].token, SettleAction::requeue, kBackoff);
  const auto back = inbox.wait_for(2);
  const auto waited = std::chrono::steady_clock::now() - settled_at;
  ASSERT_EQ(back.size(), 2U);
  EXPECT_EQ(back[1].message.body, "later");
  EXPECT_TRUE(back[1].message.redelivered);
  EXPECT_GE(waited, kBackoff) << "requeued before its backoff";

  // Held for an hour, but the close sends it: the message is in the queue, not lost.
  consumer->settle(back[1].token, SettleAction::requeue, 1h);
  consumer->close();
  EXPECT_EQ(fixture.probe.wait_for_ready_messages(1), 1U);
  EXPECT_EQ(inbox.size(), 2U);
}

// Issue 19, defect 6: someone removed the binding that brings a worker's retries back from the
// delay levels; a retry returned unroutable asks for the routes to be declared again.
TEST(ConsumerOnBroker, RetryDeliveryUnbound_RepairRetryRoutesBindsItAgain) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);
  Inbox inbox;
  auto consumer = fixture.consumer(inbox);
  consumer->start();
  fixture.probe.unbind_retry_delivery();
  try {
    fixture.publish_as_retry("returned");
    FAIL() << "a retry was routed to a queue without its delivery binding";
  } catch (const transport::PublishError& e) {
    EXPECT_EQ(e.reason(), transport::PublishError::Reason::returned) << e.what();
  }

  consumer->repair_retry_routes(0);
  // The repair runs on the consumer's I/O thread: publish until a retry is routed again.
  ASSERT_TRUE(fixture.publish_as_retry_until_routed("routed"));
  const auto received = inbox.wait_for(1);
  ASSERT_EQ(received.size(), 1U);
  EXPECT_EQ(received[0].message.body, "routed");
  consumer->settle(received[0].token, SettleAction::ack);
  consumer->close();
  EXPECT_EQ(inbox.size(), 1U);
}

// Issue 21: a connection lost (its node frozen, say) reconnects to the next endpoint, not to the
// one that failed; it consumes first, and declares the topology again behind it, on a connection
// of its own: the retries' delivery binding removed meanwhile is bound again.
TEST(ConsumerOnBroker, ConnectionLost_ConsumesAgainOnTheNextEndpointAndDeclaresTheTopologyBehind) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);
  test_support::FreezingProxy first(endpoints->front());
  Inbox inbox;
  auto consumer = fixture.consumer(inbox, 20, {first.endpoint(), endpoints->front()});
  consumer->start();
  ASSERT_TRUE(consumer->ready());
  ASSERT_EQ(first.connections(), 1);
  fixture.probe.unbind_retry_delivery();

  first.cut();
  fixture.publish({"after the cut"});
  auto received = inbox.wait_for(1);
  ASSERT_EQ(received.size(), 1U) << "not consuming again";
  EXPECT_EQ(received[0].message.body, "after the cut");
  EXPECT_EQ(first.connections(), 1) << "reconnected to the endpoint that failed";
  consumer->settle(received[0].token, SettleAction::ack);
  // Declared again in the background: publish until a retry is routed again.
  ASSERT_TRUE(fixture.publish_as_retry_until_routed("routed"));
  received = inbox.wait_for(2);
  ASSERT_EQ(received.size(), 2U);
  EXPECT_EQ(received[1].message.body, "routed");
  consumer->settle(received[1].token, SettleAction::ack);
  consumer->close();
}

TEST(ConsumerOnBroker, AfterStopConsuming_NothingMoreIsDeliveredAndItStaysInTheQueue) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);
  Inbox inbox;
  auto consumer = fixture.consumer(inbox);
  consumer->start();
  fixture.publish({"before"});
  const auto before = inbox.wait_for(1);
  ASSERT_EQ(before.size(), 1U);
  consumer->settle(before[0].token, SettleAction::ack);

  consumer->stop_consuming();  // returns once basic.cancel-ok came
  EXPECT_FALSE(consumer->ready());
  fixture.publish({"after-1", "after-2"});
  consumer->close();
  EXPECT_EQ(fixture.probe.wait_for_ready_messages(2), 2U);
  EXPECT_EQ(inbox.size(), 1U);
}

TEST(ConsumerOnBroker, QueueExistsWithAnotherType_StartFailsWithTheTopologyError) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints, config::QueueType::quorum);
  fixture.probe.declare_classic();
  Inbox inbox;
  auto consumer = fixture.consumer(inbox);
  try {
    consumer->start();
    FAIL() << "start() accepted a queue that exists with another type";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find(fixture.queue), std::string::npos) << e.what();
  }
  EXPECT_FALSE(consumer->ready());
}

// Issue 19, defect 5: a queue the config does not declare (managed elsewhere) is deleted while two
// workers consume. Its worker alone stops, not ready with the reason; the other keeps its channel
// (a delivery it holds unacked stays current and its ack is taken), and the stopped worker
// consumes again once the queue is back.
TEST(ConsumerOnBroker, ExternalQueueDeleted_OnlyItsWorkerStopsWithTheReasonAndResumesWhenItIsBack) {
  TEST_BROKER_OR_SKIP(endpoints);
  Fixture fixture(*endpoints);  // `fixture.queue`: declared by the config
  const std::string external = "warren.unit.external." + transport::random_hex(6);
  QueueProbe external_probe(endpoints->front(), external);
  external_probe.declare_classic();

  Inbox inbox;
  ConsumerOptions options;
  options.endpoints = *endpoints;
  options.connection = connection_options();
  options.reconnect_initial = 50ms;
  options.reconnect_max = 200ms;
  transport::Subscription kept;
  kept.worker = "kept";
  kept.queue = fixture.queue;
  transport::Subscription gone;
  gone.worker = "gone";
  gone.queue = external;
  config::WorkerConfig kept_worker;
  kept_worker.name = "kept";
  kept_worker.queue = fixture.queue;
  config::WorkerConfig gone_worker;
  gone_worker.name = "gone";
  gone_worker.queue = external;
  fixture.config.workers = {kept_worker, gone_worker};
  ConsumerConnection consumer(std::move(options), fixture.config,
                              std::vector<transport::Subscription>{kept, gone}, inbox.callback(),
                              nullptr, nullptr);
  consumer.start();
  ASSERT_TRUE(consumer.ready());
  fixture.publish({"held"});
  const auto held = inbox.wait_for(1);
  ASSERT_EQ(held.size(), 1U);

  external_probe.delete_queue();

  ASSERT_TRUE(::warren::test_support::eventually(
      [&] {
        const auto reasons = consumer.not_ready_reasons();
        return !consumer.ready() && reasons.size() == 1 &&
               reasons[0].find("queue '" + external +
                               "' consumed by worker 'gone' does not exist") != std::string::npos;
      },
      kPatience, 10ms));
  EXPECT_TRUE(consumer.is_current(held[0].token)) << "the other worker's channel was disturbed";
  consumer.settle(held[0].token, SettleAction::ack);
  fixture.publish({"after"});
  const auto after = inbox.wait_for(2);
  ASSERT_EQ(after.size(), 2U);
  EXPECT_EQ(after[1].message.body, "after");
  EXPECT_FALSE(after[1].message.redelivered);
  consumer.settle(after[1].token, SettleAction::ack);

  external_probe.declare_classic();
  ASSERT_TRUE(
      ::warren::test_support::eventually([&] { return consumer.ready(); }, kPatience, 10ms));
  EXPECT_TRUE(consumer.not_ready_reasons().empty());
  consumer.close();
  EXPECT_EQ(fixture.probe.wait_for_ready_messages(0), 0U) << "both acks were taken";
  EXPECT_EQ(inbox.size(), 2U);
}

}  // namespace
}  // namespace warren::broker
