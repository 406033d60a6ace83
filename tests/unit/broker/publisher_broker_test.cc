// The publisher against the test broker (test_broker.h): a message that no broker could take
// fails at once with the reason, and the publisher goes on publishing; a publish to a missing
// exchange (missing from the start, or deleted after the publisher checked it) fails alone,
// not the publishes in flight beside it (issue 19, defect 2).
#include <amqp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/amqp_table.h"
#include "broker/publisher_connection.h"
#include "eventually.h"
#include "freezing_proxy.h"
#include "publish_failure.h"
#include "test_broker.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;
using test_support::failure_of;
using test_support::PublishFailure;

constexpr auto kPublishTimeout = 5s;

PublisherOptions options_for(std::vector<BrokerEndpoint> endpoints) {
  PublisherOptions options;
  options.endpoints = std::move(endpoints);
  options.connection.connect_timeout = 5s;
  options.publish_timeout = kPublishTimeout;
  options.reconnect_initial = 50ms;
  options.reconnect_max = 200ms;
  return options;
}

// To amq.topic, not mandatory: confirmed whether or not anything is bound.
transport::OutboundMessage ordinary(const std::string& body) {
  transport::OutboundMessage out;
  out.exchange = "amq.topic";
  out.routing_key = "warren.unit.publisher";
  out.body = body;
  out.mandatory = false;
  out.persistent = false;
  return out;
}

// Queues `count` ordinary publishes without waiting for them.
std::vector<std::shared_ptr<PendingPublish>> send_many(PublisherConnection& publisher, int count,
                                                       const std::string& prefix,
                                                       std::size_t body_bytes = 0) {
  std::vector<std::shared_ptr<PendingPublish>> sent;
  for (int i = 0; i < count; ++i) {
    auto message = ordinary(prefix + "-" + std::to_string(i));
    message.body.resize(std::max(message.body.size(), body_bytes), '.');
    sent.push_back(publisher.send(std::move(message)));
  }
  return sent;
}

// Waits for `publish`; its result and, when it failed, the error's text.
std::pair<PendingPublish::Result, std::string> outcome_of(
    const std::shared_ptr<PendingPublish>& p) {
  try {
    p->wait();
    return {p->result(), ""};
  } catch (const transport::PublishError& error) {
    return {p->result(), error.what()};
  }
}

// How many of `publishes` ended confirmed (after waiting for each).
int confirmed(const std::vector<std::shared_ptr<PendingPublish>>& publishes) {
  int count = 0;
  for (const auto& publish : publishes)
    count += outcome_of(publish).first == PendingPublish::Result::confirmed ? 1 : 0;
  return count;
}

std::string unique_exchange(const std::string& what) {
  return "warren.unit." + what + "-" + transport::random_hex(6);
}

// An exchange the test declares and deletes on a connection of its own.
class TestExchange {
 public:
  TestExchange(const BrokerEndpoint& endpoint, std::string name) : name_(std::move(name)) {
    ConnectionOptions options;
    options.connect_timeout = 5s;
    connection_ = AmqpConnection::open(endpoint, options);
    amqp_channel_open(connection_->state(), 1);
    connection_->check(connection_->last_reply(), "opening the test's channel");
    amqp_exchange_declare(connection_->state(), 1, bytes_of(name_), bytes_of("topic"), 0, 0, 0, 0,
                          amqp_empty_table);
    connection_->check(connection_->last_reply(), "declaring the test's exchange");
  }
  ~TestExchange() {
    remove();
    connection_->close();
  }
  TestExchange(const TestExchange&) = delete;
  TestExchange& operator=(const TestExchange&) = delete;

  const std::string& name() const { return name_; }
  void remove() {
    amqp_exchange_delete(connection_->state(), 1, bytes_of(name_), 0);
    connection_->check(connection_->last_reply(), "deleting the test's exchange");
  }

 private:
  std::string name_;
  std::unique_ptr<AmqpConnection> connection_;
};

// The broker closes the channel that a publish to a missing exchange went out on, and sends no
// confirm on it afterwards: the publishes beside it must not share its fate.
constexpr int kBeside = 300;

TEST(PublisherOnBroker, PublishToAMissingExchange_FailsAloneAndThePublishesBesideItAreConfirmed) {
  TEST_BROKER_OR_SKIP(endpoints);
  PublisherConnection publisher(options_for(*endpoints), nullptr, nullptr);
  ASSERT_NO_THROW(publisher.publish(ordinary("first")));

  auto before = send_many(publisher, kBeside, "before");
  auto missing = ordinary("to a missing exchange");
  missing.exchange = unique_exchange("missing");
  auto bad = publisher.send(missing);
  auto after = send_many(publisher, kBeside, "after");

  const auto [result, what] = outcome_of(bad);
  EXPECT_EQ(result, PendingPublish::Result::nacked) << what;
  EXPECT_NE(what.find("NOT_FOUND - no exchange '" + missing.exchange + "'"), std::string::npos)
      << what;
  EXPECT_EQ(confirmed(before), kBeside) << "publishes sent before it failed with it";
  EXPECT_EQ(confirmed(after), kBeside) << "publishes sent after it failed with it";
  EXPECT_NO_THROW(publisher.publish(ordinary("last")));
}

TEST(PublisherOnBroker, ExchangeDeletedAfterItsCheck_ThatPublishFailsTheOnesAfterItAreConfirmed) {
  TEST_BROKER_OR_SKIP(endpoints);
  PublisherConnection publisher(options_for(*endpoints), nullptr, nullptr);
  TestExchange exchange(endpoints->front(), unique_exchange("deleted"));
  auto to_exchange = ordinary("to the test's exchange");
  to_exchange.exchange = exchange.name();
  ASSERT_NO_THROW(publisher.publish(to_exchange));  // known to exist from now on

  exchange.remove();
  // Large bodies keep the I/O thread busy sending them while the rest is queued, so that the
  // publishes after the bad one tend to leave with it, before the broker's channel.close is read.
  auto before = send_many(publisher, kBeside, "before", 64 * 1024);
  auto bad = publisher.send(to_exchange);
  auto after = send_many(publisher, kBeside, "after");

  const auto [result, what] = outcome_of(bad);
  EXPECT_EQ(result, PendingPublish::Result::nacked) << what;
  EXPECT_NE(what.find("NOT_FOUND - no exchange '" + exchange.name() + "'"), std::string::npos)
      << what;
  // The broker read the ones before it and may have routed them, but will never confirm them:
  // those not confirmed yet are in doubt, and say so. The ones after it it never read: they go
  // out again on the reopened channel.
  for (const auto& publish : before) {
    const auto [before_result, before_what] = outcome_of(publish);
    if (before_result == PendingPublish::Result::confirmed)
      continue;
    EXPECT_EQ(before_result, PendingPublish::Result::unavailable) << before_what;
    EXPECT_NE(before_what.find("may or may not have been published"), std::string::npos)
        << before_what;
  }
  EXPECT_EQ(confirmed(after), kBeside) << "publishes the broker never read failed";
  // Checked again: refused at once, off the confirm channel.
  const PublishFailure again = failure_of(publisher, to_exchange);
  EXPECT_EQ(again.reason, transport::PublishError::Reason::nacked) << again.what;
  EXPECT_NO_THROW(publisher.publish(ordinary("last")));
}

// Issue 19, defect 4: close() used to stop the watchdog first, then wait for the I/O thread,
// which a publish stuck in the socket (a connection the broker blocked, a half-open peer) held
// forever.
TEST(PublisherOnBroker, PublishStuckInTheSocket_CloseReturnsWithinItsGraceAndFailsThePublish) {
  TEST_BROKER_OR_SKIP(endpoints);
  test_support::FreezingProxy proxy(endpoints->front());
  auto options = options_for({proxy.endpoint()});
  options.publish_timeout = 300s;  // only close() can end the publish within the test
  PublisherConnection publisher(options, nullptr, nullptr);
  ASSERT_NO_THROW(publisher.publish(ordinary("before")));

  // The peer stops reading in the middle of a body far larger than the socket buffers hold.
  proxy.freeze_after(1024 * 1024);
  auto large = ordinary("stuck");
  large.body.assign(64 * 1024 * 1024, '.');
  auto stuck = publisher.send(large);
  ::warren::test_support::eventually([&] { return proxy.frozen(); }, 10s, 5ms);
  ASSERT_TRUE(proxy.frozen()) << "the publish never reached the proxy";

  const auto started = std::chrono::steady_clock::now();
  auto closing = std::async(std::launch::async, [&] { publisher.close(); });
  const bool closed = closing.wait_for(kPublisherCloseGrace + 5s) == std::future_status::ready;
  const auto took = std::chrono::steady_clock::now() - started;
  if (!closed) {
    proxy.cut();  // lets the stuck thread go, so that the test can end
    closing.wait();
  }
  ASSERT_TRUE(closed) << "close() hung on the publish stuck in the socket";
  EXPECT_LT(took, kPublisherCloseGrace + 2s);
  const auto [result, what] = outcome_of(stuck);
  EXPECT_EQ(result, PendingPublish::Result::unavailable) << what;
}

TEST(PublisherOnBroker, RoutingKeyOverAShortString_FailsAtOnceNamingItAndPublishingGoesOn) {
  TEST_BROKER_OR_SKIP(endpoints);
  PublisherConnection publisher(options_for(*endpoints), nullptr, nullptr);
  ASSERT_NO_THROW(publisher.publish(ordinary("before")));

  auto poison = ordinary("poison");
  poison.routing_key = std::string(300, 'k');
  const PublishFailure failure = failure_of(publisher, poison);
  EXPECT_EQ(failure.reason, transport::PublishError::Reason::nacked) << failure.what;
  EXPECT_NE(failure.what.find("the routing key is 300 bytes long"), std::string::npos)
      << failure.what;
  EXPECT_LT(failure.took, kPublishTimeout / 2) << "it waited for the publish timeout";

  EXPECT_TRUE(publisher.connected());
  EXPECT_NO_THROW(publisher.publish(ordinary("after")));
}

TEST(PublisherOnBroker, HeadersLargerThanAFrame_FailAtOnceAndTheNextPublishIsConfirmed) {
  TEST_BROKER_OR_SKIP(endpoints);
  PublisherConnection publisher(options_for(*endpoints), nullptr, nullptr);
  ASSERT_NO_THROW(publisher.publish(ordinary("before")));

  auto poison = ordinary("poison");
  poison.headers.emplace_back("x-huge", std::string(256 * 1024, 'h'));  // frame_max is 128 KiB
  const PublishFailure failure = failure_of(publisher, poison);
  EXPECT_EQ(failure.reason, transport::PublishError::Reason::nacked) << failure.what;
  EXPECT_NE(failure.what.find("cannot be sent"), std::string::npos) << failure.what;
  EXPECT_LT(failure.took, kPublishTimeout / 2) << "it waited for the publish timeout";

  // The connection that held half of it is replaced; nothing else is held up.
  EXPECT_NO_THROW(publisher.publish(ordinary("after")));
}

}  // namespace
}  // namespace warren::broker
