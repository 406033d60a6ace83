// Specification of the publisher without a broker: close() leaves no caller waiting, and a
// publish that comes after it (a handler still running past the shutdown timeout) fails at once
// instead of touching a destroyed connection or waiting for an I/O thread that is gone; a publish
// with no broker times out at its deadline saying why; the endpoints are tried in turn.
#include "broker/publisher_connection.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "broker/wakeup_queue.h"
#include "hanging_up_broker.h"
#include "publish_failure.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;
using test_support::failure_of;

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

transport::OutboundMessage message() {
  transport::OutboundMessage out;
  out.exchange = "orders";
  out.routing_key = "order.placed";
  out.body = "{}";
  return out;
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
  Wakeup wakeup;
  WakeupQueue<int> queue(wakeup);
  EXPECT_TRUE(queue.push(1));
  queue.close();
  EXPECT_FALSE(queue.push(2));
  EXPECT_EQ(queue.take(), std::vector<int>{1});
}

TEST(WakeupQueue, TakeInto_TwoBuffersTakeTurnsAndKeepTheirCapacity) {
  Wakeup wakeup;
  WakeupQueue<int> queue(wakeup);
  std::vector<int> taken{99};  // whatever it held goes
  for (int i = 0; i < 100; ++i)
    queue.push(i);
  queue.take_into(taken);
  ASSERT_EQ(taken.size(), 100U);
  EXPECT_EQ(taken.front(), 0);
  EXPECT_EQ(taken.back(), 99);
  const int* first_buffer = taken.data();
  queue.push(100);
  queue.take_into(taken);
  EXPECT_EQ(taken, std::vector<int>{100});
  queue.push(101);
  queue.take_into(taken);  // the first buffer again, grown already
  EXPECT_EQ(taken, std::vector<int>{101});
  EXPECT_EQ(taken.data(), first_buffer);
  EXPECT_GE(taken.capacity(), 100U);
  queue.take_into(taken);
  EXPECT_TRUE(taken.empty());
}

TEST(PublisherConnection, PublishAfterClose_FailsAtOnceAsUnavailable) {
  PublisherConnection publisher(unreachable_broker(), nullptr, nullptr);
  publisher.close();
  auto publishing =
      std::async(std::launch::async, [&] { return failure_of(publisher, message()); });
  ASSERT_EQ(publishing.wait_for(10s), std::future_status::ready) << "publish after close hangs";
  EXPECT_EQ(publishing.get().reason, transport::PublishError::Reason::unavailable);
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
          failure_of(publisher, message());
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

TEST(WakeupQueue, APushWakesThePollerUntilItDrains) {
  Wakeup wakeup;
  WakeupQueue<int> queue(wakeup);
  pollfd ready{wakeup.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&ready, 1, 0), 0);
  queue.push(1);
  queue.push(2);  // not empty: no second signal
  EXPECT_EQ(::poll(&ready, 1, 0), 1);
  wakeup.drain();
  EXPECT_EQ(::poll(&ready, 1, 0), 0);  // drained: quiet again
  EXPECT_EQ(queue.take(), (std::vector<int>{1, 2}));
  queue.push(3);  // empty again: signals
  EXPECT_EQ(::poll(&ready, 1, 0), 1);
}

TEST(WakeupQueue, APushWhileThePollerIsAwake_DoesNotSignalAndIsSeenBeforeItSleeps) {
  Wakeup wakeup;
  WakeupQueue<int> queue(wakeup);
  pollfd ready{wakeup.fd(), POLLIN, 0};
  wakeup.awake();
  queue.push(1);
  EXPECT_EQ(::poll(&ready, 1, 0), 0) << "an awake poller was signalled";
  wakeup.may_sleep();
  EXPECT_FALSE(queue.empty()) << "the poller would sleep with work queued";
  EXPECT_EQ(queue.take(), std::vector<int>{1});
  queue.push(2);  // the poller may be asleep now: signalled
  EXPECT_EQ(::poll(&ready, 1, 0), 1);
}

// How many times the wakeup was signalled since the last read (an eventfd adds its writes up).
std::uint64_t signals(Wakeup& wakeup) {
  std::uint64_t count = 0;
  if (::read(wakeup.fd(), &count, sizeof(count)) != sizeof(count))
    return 0;
  return count;
}

TEST(WakeupQueue, QuietPushesLeaveASleepingPollerAsleep_TheNextPushSignalsOnceForAll) {
  Wakeup wakeup;
  WakeupQueue<int> queue(wakeup);
  queue.push(1, /*wake=*/false);
  queue.push(2, /*wake=*/false);
  EXPECT_EQ(signals(wakeup), 0u) << "a quiet push signalled";
  queue.push(3);  // queued behind quiet ones, yet nobody signalled: this one must
  queue.push(4);
  EXPECT_EQ(signals(wakeup), 1u);
  EXPECT_EQ(queue.take(), (std::vector<int>{1, 2, 3, 4}));
  queue.push(5, /*wake=*/false);
  queue.push(6);
  EXPECT_EQ(signals(wakeup), 1u) << "the take() should have reset what was owed";
}

TEST(WakeupQueue, AQuietPushWhileThePollerIsAwake_IsSeenBeforeItSleeps) {
  Wakeup wakeup;
  WakeupQueue<int> queue(wakeup);
  wakeup.awake();
  queue.push(1, /*wake=*/false);
  queue.push(2);  // the poller is awake: it sees both before it sleeps
  EXPECT_EQ(signals(wakeup), 0u);
  wakeup.may_sleep();
  EXPECT_FALSE(queue.empty()) << "the poller would sleep with work queued";
  EXPECT_EQ(queue.take(), (std::vector<int>{1, 2}));
  queue.push(3);
  EXPECT_EQ(signals(wakeup), 1u);
}

TEST(PublisherConnection, NoEndpoint_IsRefusedAtConstruction) {
  auto options = unreachable_broker();
  options.endpoints.clear();
  EXPECT_THROW(PublisherConnection(std::move(options), nullptr, nullptr), std::invalid_argument);
}

TEST(PublisherConnection, NoBrokerUntilTheDeadline_TimesOutSayingSo) {
  test_support::HangingUpBroker broker;
  auto options = unreachable_broker();
  options.endpoints = {broker.endpoint()};
  options.publish_timeout = 200ms;
  PublisherConnection publisher(std::move(options), nullptr, nullptr);
  try {
    publisher.publish(message());
    FAIL() << "published without a broker";
  } catch (const transport::PublishError& e) {
    EXPECT_EQ(e.reason(), transport::PublishError::Reason::timeout);
    EXPECT_NE(std::string(e.what()).find("no connection to the broker"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(publisher.connected());
}

TEST(PublisherConnection, SeveralEndpoints_AreTriedInTurn) {
  test_support::HangingUpBroker first;
  test_support::HangingUpBroker second;
  auto options = unreachable_broker();
  options.endpoints = {first.endpoint(), second.endpoint()};
  PublisherConnection publisher(std::move(options), nullptr, nullptr);
  EXPECT_TRUE(first.wait_for_connections(2, 10s));
  EXPECT_TRUE(second.wait_for_connections(2, 10s));
  publisher.close();
}

}  // namespace
}  // namespace warren::broker
