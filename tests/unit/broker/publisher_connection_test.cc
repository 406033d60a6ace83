// Specification of the publisher's shutdown: close() leaves no caller waiting, and a publish that
// comes after it (a handler still running past the shutdown timeout) fails at once instead of
// touching a destroyed connection or waiting for an I/O thread that is gone.
#include "broker/publisher_connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
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
