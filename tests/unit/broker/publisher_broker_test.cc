// The publisher against the test broker (WARREN_TEST_AMQP_URI, which scripts/test and
// scripts/services/rabbitmq.sh export): a message that no broker could take fails at once with
// the reason, and the publisher goes on publishing. Without the broker these tests skip, unless
// WARREN_REQUIRE_SERVICES=1, where they fail.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "broker/publisher_connection.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kPublishTimeout = 5s;

std::optional<PublisherOptions> test_broker() {
  const char* uri = std::getenv("WARREN_TEST_AMQP_URI");
  if (uri == nullptr || *uri == '\0')
    return std::nullopt;
  config::BrokerConfig broker;
  broker.uris.emplace_back(uri);
  PublisherOptions options;
  options.endpoints = resolve_endpoints(broker);
  options.connection.connect_timeout = 5s;
  options.publish_timeout = kPublishTimeout;
  options.reconnect_initial = 50ms;
  options.reconnect_max = 200ms;
  return options;
}

#define TEST_BROKER_OR_SKIP(options)                                                    \
  const auto options = test_broker();                                                   \
  if (!options) {                                                                       \
    const char* required = std::getenv("WARREN_REQUIRE_SERVICES");                      \
    if (required != nullptr && std::string(required) == "1")                            \
      FAIL() << "WARREN_TEST_AMQP_URI is not set (scripts/services/rabbitmq.sh start)"; \
    GTEST_SKIP() << "no test broker: WARREN_TEST_AMQP_URI is not set";                  \
  }

// To amq.topic, not mandatory: confirmed whether or not anything is bound.
runtime::OutboundMessage ordinary(const std::string& body) {
  runtime::OutboundMessage out;
  out.exchange = "amq.topic";
  out.routing_key = "warren.unit.publisher";
  out.body = body;
  out.mandatory = false;
  out.persistent = false;
  return out;
}

struct Failure {
  runtime::PublishError::Reason reason;
  std::string what;
  Clock::duration took;
};

Failure failure_of(PublisherConnection& publisher, const runtime::OutboundMessage& message) {
  const auto started = Clock::now();
  try {
    publisher.publish(message);
  } catch (const runtime::PublishError& e) {
    return {e.reason(), e.what(), Clock::now() - started};
  }
  ADD_FAILURE() << "the broker confirmed a message it cannot have received";
  return {runtime::PublishError::Reason::unavailable, "", Clock::now() - started};
}

TEST(PublisherOnBroker, RoutingKeyOverAShortString_FailsAtOnceNamingItAndPublishingGoesOn) {
  TEST_BROKER_OR_SKIP(options);
  PublisherConnection publisher(*options, nullptr, nullptr);
  ASSERT_NO_THROW(publisher.publish(ordinary("before")));

  auto poison = ordinary("poison");
  poison.routing_key = std::string(300, 'k');
  const Failure failure = failure_of(publisher, poison);
  EXPECT_EQ(failure.reason, runtime::PublishError::Reason::nacked) << failure.what;
  EXPECT_NE(failure.what.find("the routing key is 300 bytes long"), std::string::npos)
      << failure.what;
  EXPECT_LT(failure.took, kPublishTimeout / 2) << "it waited for the publish timeout";

  EXPECT_TRUE(publisher.connected());
  EXPECT_NO_THROW(publisher.publish(ordinary("after")));
}

TEST(PublisherOnBroker, HeadersLargerThanAFrame_FailAtOnceAndTheNextPublishIsConfirmed) {
  TEST_BROKER_OR_SKIP(options);
  PublisherConnection publisher(*options, nullptr, nullptr);
  ASSERT_NO_THROW(publisher.publish(ordinary("before")));

  auto poison = ordinary("poison");
  poison.headers.emplace_back("x-huge", std::string(256 * 1024, 'h'));  // frame_max is 128 KiB
  const Failure failure = failure_of(publisher, poison);
  EXPECT_EQ(failure.reason, runtime::PublishError::Reason::nacked) << failure.what;
  EXPECT_NE(failure.what.find("cannot be sent"), std::string::npos) << failure.what;
  EXPECT_LT(failure.took, kPublishTimeout / 2) << "it waited for the publish timeout";

  // The connection that held half of it is replaced; nothing else is held up.
  EXPECT_NO_THROW(publisher.publish(ordinary("after")));
}

}  // namespace
}  // namespace warren::broker
