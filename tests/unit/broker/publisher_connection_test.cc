// Specification of the publisher's shutdown: close() leaves no caller waiting, and a publish that
// comes after it (a handler still running past the shutdown timeout) fails at once instead of
// touching a destroyed connection or waiting for an I/O thread that is gone.
#include "broker/publisher_connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker/wakeup_queue.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;

// Nothing listens on port 1: every connection attempt is refused, publishes wait for a broker.
PublisherOptions unreachable_broker() {
  PublisherOptions options;
  BrokerEndpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = 1;
  options.endpoints.push_back(endpoint);
  options.connection.connect_timeout = 1s;
  options.publish_timeout = 60s;  // far beyond every wait below: only close() can end them
  options.reconnect_initial = 10ms;
  options.reconnect_max = 50ms;
  return options;
}

runtime::OutboundMessage message() {
  runtime::OutboundMessage out;
  out.exchange = "orders";
  out.routing_key = "order.placed";
  out.body = "{}";
  return out;
}

runtime::PublishError::Reason failure_of(PublisherConnection& publisher) {
  try {
    publisher.publish(message());
  } catch (const runtime::PublishError& e) {
    return e.reason();
  }
  ADD_FAILURE() << "publish succeeded without a broker";
  return runtime::PublishError::Reason::nacked;
}

TEST(WhyUnsendable, AnOrdinaryMessage_CanBeSent) {
  EXPECT_EQ(why_unsendable(message()), std::nullopt);
}

TEST(WhyUnsendable, ANameOrKeyOverAnAmqpShortString_IsRefusedSayingWhichAndHowLong) {
  auto long_key = message();
  long_key.routing_key = std::string(300, 'k');
  EXPECT_EQ(why_unsendable(long_key), "the routing key is 300 bytes long; AMQP allows at most 255");

  auto long_header = message();
  long_header.headers.emplace_back(std::string(256, 'h'), "value");
  const auto why = why_unsendable(long_header);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("header name 'hhhh"), std::string::npos) << *why;
  EXPECT_NE(why->find("256 bytes long"), std::string::npos) << *why;

  auto long_id = message();
  long_id.message_id = std::string(256, 'i');
  EXPECT_NE(why_unsendable(long_id), std::nullopt);
  auto long_exchange = message();
  long_exchange.exchange = std::string(256, 'e');
  EXPECT_NE(why_unsendable(long_exchange), std::nullopt);
  auto long_header_value = message();
  long_header_value.headers.emplace_back("h", std::string(10000, 'v'));  // a long string: fine
  EXPECT_EQ(why_unsendable(long_header_value), std::nullopt);
}

TEST(WakeupQueue, PushAfterClose_IsRefusedAndWhatWasQueuedIsStillTaken) {
  WakeupQueue<int> queue;
  EXPECT_TRUE(queue.push(1));
  queue.close();
  EXPECT_FALSE(queue.push(2));
  EXPECT_EQ(queue.take(), std::vector<int>{1});
}

TEST(PublisherConnection, PublishAfterClose_FailsAtOnceAsUnavailable) {
  PublisherConnection publisher(unreachable_broker(), nullptr, nullptr);
  publisher.close();
  auto publishing = std::async(std::launch::async, [&] { return failure_of(publisher); });
  ASSERT_EQ(publishing.wait_for(10s), std::future_status::ready) << "publish after close hangs";
  EXPECT_EQ(publishing.get(), runtime::PublishError::Reason::unavailable);
}

TEST(PublisherConnection, PublishesWaitingForTheBroker_FailAsUnavailableWhenClosed) {
  PublisherConnection publisher(unreachable_broker(), nullptr, nullptr);
  auto waiting = publisher.send(message());
  publisher.close();
  EXPECT_EQ(waiting->result(), PendingPublish::Result::unavailable);
}

TEST(PublisherConnection, PublishesRacingClose_EveryCallerReturns) {
  for (int round = 0; round < 20; ++round) {
    PublisherConnection publisher(unreachable_broker(), nullptr, nullptr);
    std::atomic<bool> closed{false};
    std::vector<std::future<void>> callers;
    for (int i = 0; i < 4; ++i) {
      callers.push_back(std::async(std::launch::async, [&] {
        // Until one publish has started after close() returned.
        for (bool after_close = false; !after_close;) {
          after_close = closed.load();
          failure_of(publisher);
        }
      }));
    }
    std::this_thread::yield();
    publisher.close();
    closed = true;
    for (auto& caller : callers) {
      ASSERT_EQ(caller.wait_for(10s), std::future_status::ready)
          << "a publish racing close() never returned (round " << round << ")";
    }
  }
}

}  // namespace
}  // namespace warren::broker
