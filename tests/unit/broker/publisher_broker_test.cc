// The publisher against the test broker (test_broker.h): a message that no broker could take
// fails at once with the reason, and the publisher goes on publishing.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "broker/publisher_connection.h"
#include "publish_failure.h"
#include "test_broker.h"

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
