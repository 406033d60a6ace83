// Harness::use_config: publishes routed through the exchanges, queues and bindings of a
// warren.toml as the host routes them, failing as the host's publish fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

// Publishes the body's "exchange routing-key" pair, then acks; a failed publish throws
// warren::PublishError out of handle() (a retry, as in the host).
class Forwarder final : public warren::Handler {
 public:
  explicit Forwarder(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override {
    const std::string body(msg.body());
    const std::size_t space = body.find(' ');
    ctx.publish(body.substr(0, space), body.substr(space + 1), "payload");
    return warren::Outcome::ack();
  }
};

constexpr const char* kTopology = R"(
[broker]
transport = "memory"

[[exchanges]]
name = "orders"
type = "topic"

[[exchanges]]
name = "audit"
type = "fanout"

[[queues]]
name = "billing"
allow_message_loss = true
bindings = [{ exchange = "orders", routing_key = "order.*" }]

[[queues]]
name = "shipping"
allow_message_loss = true
bindings = [{ exchange = "orders", routing_key = "order.paid" }]

[[queues]]
name = "audit.q"
allow_message_loss = true
bindings = [{ exchange = "audit" }]
)";

TestMessage forward(std::string exchange_and_key) {
  TestMessage message;
  message.body = std::move(exchange_and_key);
  message.message_id = "m-1";
  return message;
}

TEST(HarnessRouting, RoutedPublish_IsRecordedWithTheQueuesItReached) {
  Harness harness = Harness::of<Forwarder>();
  harness.use_config_text(kTopology);

  EXPECT_EQ(harness.deliver(forward("orders order.paid")).kind, Result::Kind::ack);

  const auto routed = harness.routed();
  ASSERT_EQ(routed.size(), 1u);
  EXPECT_THAT(routed[0].queues, ElementsAre("billing", "shipping"));
  EXPECT_EQ(harness.published_to("shipping").size(), 1u);
  EXPECT_EQ(harness.published_to("audit.q").size(), 0u);
}

TEST(HarnessRouting, UnroutableMandatoryPublish_FailsWithTheHostsPublishError) {
  Harness harness = Harness::of<Forwarder>();
  harness.use_config_text(kTopology);

  const Result result = harness.deliver(forward("orders invoice.sent"));

  EXPECT_EQ(result.kind, Result::Kind::retry) << result;
  EXPECT_EQ(result.exception_type, "warren::PublishError");
  EXPECT_EQ(result.reason,
            "unroutable: no queue is bound to exchange 'orders' for routing key 'invoice.sent'");
  EXPECT_TRUE(harness.published().empty()) << "nothing was confirmed";
}

TEST(HarnessRouting, PublishToAnUndeclaredExchange_FailsAsTheHostWould) {
  Harness harness = Harness::of<Forwarder>();
  harness.use_config_text(kTopology);

  const Result result = harness.deliver(forward("ordres order.paid"));

  EXPECT_EQ(result.kind, Result::Kind::retry) << result;
  EXPECT_EQ(result.reason, "NOT_FOUND - no exchange 'ordres'");
  EXPECT_TRUE(harness.published().empty());
}

TEST(HarnessRouting, DefaultExchange_RoutesToTheQueueNamedByTheRoutingKey) {
  Harness harness = Harness::of<Forwarder>();
  harness.use_config_text(kTopology);

  EXPECT_EQ(harness.deliver(forward(" audit.q")).kind, Result::Kind::ack);
  EXPECT_EQ(harness.deliver(forward(" nowhere")).kind, Result::Kind::retry);
  EXPECT_EQ(harness.published_to("audit.q").size(), 1u);
}

TEST(HarnessRouting, WithoutAConfiguration_EveryPublishIsConfirmedAndRoutedNowhere) {
  Harness harness = Harness::of<Forwarder>();

  EXPECT_EQ(harness.deliver(forward("ordres invoice.sent")).kind, Result::Kind::ack);

  const auto routed = harness.routed();
  ASSERT_EQ(routed.size(), 1u);
  EXPECT_TRUE(routed[0].queues.empty());
}

TEST(HarnessRouting, InvalidConfiguration_IsRefusedWithTheLoadersProblem) {
  Harness harness = Harness::of<Forwarder>();
  EXPECT_THAT(
      [&] {
        harness.use_config_text(
            "[broker]\ntransport = \"memory\"\n[[queues]]\nname = \"q\"\n"
            "bindings = [{ exchange = \"missing\" }]\n",
            "bad.toml");
      },
      ThrowsMessage<std::runtime_error>(AllOf(HasSubstr("bad.toml"), HasSubstr("missing"))));
}

}  // namespace
