// my_plugin in Warren's in-memory harness: what the host would do with each message.
#include <gtest/gtest.h>
#include <warren/testing/harness.h>

#include <stdexcept>
#include <string>

#include "my_plugin.h"

namespace {

using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

TestMessage message_with_body(std::string body) {
  TestMessage message;
  message.body = std::move(body);
  message.routing_key = "my.key";
  message.message_id = "m-1";
  return message;
}

TEST(MyPlugin, MessageWithABody_IsAckedLoggedAndCounted) {
  Harness harness = Harness::of<my_plugin::MyPlugin>();

  const Result result = harness.deliver(message_with_body("hello"));

  EXPECT_EQ(result.kind, Result::Kind::ack) << result;
  const auto logs = harness.logs();
  ASSERT_FALSE(logs.empty());
  EXPECT_EQ(logs.back().text, "handled message m-1 (5 bytes, routing key my.key)");
  EXPECT_EQ(logs.back().message_id, "m-1");
  EXPECT_EQ(harness.metrics().at("warren_plugin_my_plugin_messages_total").sum(), 1.0);
}

TEST(MyPlugin, EmptyBody_IsDeadLetteredAtOnceWithTheReason) {
  Harness harness = Harness::of<my_plugin::MyPlugin>();

  const Result result = harness.deliver(message_with_body(""));

  EXPECT_EQ(result.kind, Result::Kind::dead_letter) << result;
  EXPECT_EQ(result.error, Result::Error::permanent);
  EXPECT_EQ(result.reason, "empty body: nothing to handle");
}

TEST(MyPlugin, BodyOverMaxBodyBytes_IsDeadLettered) {
  Harness harness = Harness::of<my_plugin::MyPlugin>({{"max_body_bytes", "4"}});

  const Result result = harness.deliver(message_with_body("hello"));

  EXPECT_EQ(result.kind, Result::Kind::dead_letter) << result;
  EXPECT_EQ(result.reason, "body of 5 bytes exceeds max_body_bytes (4)");
}

TEST(MyPlugin, InvalidMaxBodyBytes_RefusesToStartNamingTheSetting) {
  try {
    Harness::of<my_plugin::MyPlugin>({{"max_body_bytes", "lots"}});
    FAIL() << "the constructor accepted max_body_bytes = \"lots\"";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("max_body_bytes must be a positive integer"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
