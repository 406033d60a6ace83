// Specification of the consuming connection where no RabbitMQ is needed: its channel numbers,
// and its I/O loop against a broker that hangs up (HangingUpBroker): start() does not wait for a
// broker that is not there, reconnects wait for the backoff and try the endpoints in turn,
// stop_consuming() ends the reconnecting, settlements with no connection are dropped and
// counted, and close() or the destructor return at once.
#include "broker/consumer_connection.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "broker/channel_numbers.h"
#include "hanging_up_broker.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::HangingUpBroker;

constexpr auto kPatience = 10s;

ConsumerOptions options_for(const std::vector<BrokerEndpoint>& endpoints,
                            std::chrono::milliseconds reconnect = 10ms) {
  ConsumerOptions options;
  options.endpoints = endpoints;
  options.connection.connect_timeout = 2s;
  options.reconnect_initial = reconnect;
  options.reconnect_max = reconnect;
  return options;
}

std::vector<transport::Subscription> one_subscription() {
  transport::Subscription subscription;
  subscription.worker = "orders";
  subscription.queue = "orders";
  return {subscription};
}

struct Consumer {
  config::Config config;
  observability::Metrics metrics;
  std::unique_ptr<ConsumerConnection> connection;

  explicit Consumer(ConsumerOptions options) {
    connection = std::make_unique<ConsumerConnection>(
        std::move(options), config, one_subscription(),
        [](const DeliveryToken&, transport::InboundMessage, const std::string&) {
          ADD_FAILURE() << "a delivery without a broker";
        },
        &metrics, nullptr);
  }
};

TEST(ChannelNumbers, SubscriptionsConsumeFromTheFirstConsumerChannelOn) {
  EXPECT_EQ(consumer_channel(0), kFirstConsumerChannel);
  EXPECT_EQ(consumer_channel(3), kFirstConsumerChannel + 3);
  EXPECT_NE(kTopologyChannel, kFirstConsumerChannel);
  EXPECT_EQ(subscription_on(kFirstConsumerChannel, 3), 0U);
  EXPECT_EQ(subscription_on(kFirstConsumerChannel + 2, 3), 2U);
  EXPECT_EQ(subscription_on(kFirstConsumerChannel + 3, 3), std::nullopt);
  EXPECT_EQ(subscription_on(kTopologyChannel, 3), std::nullopt);
  EXPECT_EQ(subscription_on(0, 3), std::nullopt);
}

TEST(ConsumerConnection, NoEndpoint_IsRefusedAtConstruction) {
  config::Config config;
  EXPECT_THROW(
      ConsumerConnection(options_for({}), config, one_subscription(), {}, nullptr, nullptr),
      std::invalid_argument);
}

TEST(ConsumerConnection, BrokerHangsUp_StartReturnsNotReadyAndItKeepsReconnecting) {
  HangingUpBroker broker;
  Consumer consumer(options_for({broker.endpoint()}));
  consumer.connection->start();
  EXPECT_FALSE(consumer.connection->ready());
  EXPECT_TRUE(broker.wait_for_connections(3, kPatience)) << broker.connections() << " attempts";
  EXPECT_FALSE(consumer.connection->ready());
  EXPECT_EQ(consumer.metrics.broker_connected().Value(), 0);
  EXPECT_EQ(consumer.metrics.broker_reconnects().Value(), 0);  // it never was connected
  consumer.connection->close();
}

TEST(ConsumerConnection, Reconnects_WaitAtLeastTheBackoffBetweenAttempts) {
  HangingUpBroker broker;
  Consumer consumer(options_for({broker.endpoint()}, 150ms));
  const auto started = Clock::now();
  consumer.connection->start();
  ASSERT_TRUE(broker.wait_for_connections(3, kPatience));
  // The first attempt at once, then two waits of at least reconnect_initial (jitter only
  // stretches them).
  EXPECT_GE(Clock::now() - started, 300ms);
  consumer.connection->close();
}

TEST(ConsumerConnection, SeveralEndpoints_AreTriedInTurn) {
  HangingUpBroker first;
  HangingUpBroker second;
  Consumer consumer(options_for({first.endpoint(), second.endpoint()}));
  consumer.connection->start();
  EXPECT_TRUE(first.wait_for_connections(2, kPatience));
  EXPECT_TRUE(second.wait_for_connections(2, kPatience));
  consumer.connection->close();
}

TEST(ConsumerConnection, AfterStopConsuming_ItNeverConnectsAgain) {
  HangingUpBroker broker;
  Consumer consumer(options_for({broker.endpoint()}));
  consumer.connection->start();
  ASSERT_TRUE(broker.wait_for_connections(2, kPatience));
  consumer.connection->stop_consuming();  // returns once the I/O thread applied it
  const int attempts = broker.connections();
  // Nothing to await for an event that must not happen: give it many backoff periods.
  EXPECT_FALSE(broker.wait_for_connections(attempts + 1, 300ms))
      << "connected again after stop_consuming()";
  EXPECT_FALSE(consumer.connection->ready());
  consumer.connection->close();
}

TEST(ConsumerConnection, SettlementsWithoutAConnection_AreDroppedAndCountedStale) {
  HangingUpBroker broker;
  Consumer consumer(options_for({broker.endpoint()}));
  consumer.connection->start();
  const DeliveryToken token{1, 0, 7};
  consumer.connection->settle(token, SettleAction::ack);
  consumer.connection->settle(token, SettleAction::requeue);
  consumer.connection->settle(DeliveryToken{1, 0, 8}, SettleAction::reject);
  consumer.connection->close();  // applies everything queued before it
  EXPECT_EQ(consumer.metrics.stale_acks_dropped().Value(), 3);
}

TEST(ConsumerConnection, CloseAndSettleAfterIt_ReturnAtOnce) {
  HangingUpBroker broker;
  Consumer consumer(options_for({broker.endpoint()}));
  consumer.connection->start();
  auto closing = std::async(std::launch::async, [&] { consumer.connection->close(); });
  ASSERT_EQ(closing.wait_for(kPatience), std::future_status::ready) << "close() hangs";
  consumer.connection->settle(DeliveryToken{1, 0, 1}, SettleAction::ack);  // nobody takes it
  consumer.connection->stop_consuming();
  consumer.connection->close();  // twice: nothing left to do
}

TEST(ConsumerConnection, DestroyedWithoutClose_ReturnsAtOnce) {
  HangingUpBroker broker;
  auto destroying = std::async(std::launch::async, [&] {
    Consumer consumer(options_for({broker.endpoint()}));
    consumer.connection->start();
    broker.wait_for_connections(1, kPatience);
  });
  ASSERT_EQ(destroying.wait_for(kPatience), std::future_status::ready);
}

TEST(ConsumerConnection, NeverStarted_CloseAndStopConsumingReturnAtOnce) {
  HangingUpBroker broker;
  Consumer consumer(options_for({broker.endpoint()}));
  consumer.connection->stop_consuming();
  consumer.connection->close();
  EXPECT_EQ(broker.connections(), 0);
}

}  // namespace
}  // namespace warren::broker
