// my_plugin in Warren's in-memory harness: what the host would do with each message. The plugin
// is loaded from the built libmy_plugin.so through its WARREN_PLUGIN descriptor, as the host
// loads it; publishes are routed, and failures retried, as conf/my_plugin.toml says.
#include <gtest/gtest.h>
#include <warren/testing/harness.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace {

using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::Settings;
using warren::testing::SettledMessage;
using warren::testing::TestMessage;

// The plugin as the worker "my_plugin" of conf/my_plugin.toml runs it, with these settings.
Harness loaded_plugin(Settings settings = {}) {
  Harness harness = Harness::load(MY_PLUGIN_LIBRARY, std::move(settings), "my_plugin");
  harness.use_config(MY_PLUGIN_CONFIG);
  return harness;
}

TestMessage message_with_body(std::string body) {
  TestMessage message;
  message.body = std::move(body);
  message.routing_key = "my.key";
  message.message_id = "m-1";
  return message;
}

TEST(MyPlugin, MessageWithABody_IsAckedLoggedAndCounted) {
  Harness harness = loaded_plugin();

  const Result result = harness.deliver(message_with_body("hello"));

  EXPECT_EQ(result.kind, Result::Kind::ack) << result;
  const auto logs = harness.logs();
  ASSERT_FALSE(logs.empty());
  EXPECT_EQ(logs.back().text, "handled message m-1 (5 bytes, routing key my.key)");
  EXPECT_EQ(logs.back().message_id, "m-1");
  EXPECT_EQ(harness.metrics().at("warren_plugin_my_plugin_messages_total").sum(), 1.0);
}

TEST(MyPlugin, WithNotifyExchange_TheAnnouncementReachesTheNotificationsQueue) {
  Harness harness = loaded_plugin({{"notify_exchange", "my_plugin.notifications"}});

  EXPECT_EQ(harness.deliver(message_with_body("hello")).kind, Result::Kind::ack);

  const auto announced = harness.published_to("my_plugin.notifications.q");
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_EQ(announced[0].routing_key, "my_plugin.handled");
  EXPECT_EQ(announced[0].body, "hello");
}

TEST(MyPlugin, NotifyExchangeTheConfigDoesNotDeclare_IsRetriedThenDeadLettered) {
  Harness harness = loaded_plugin({{"notify_exchange", "my_plugin.notifcations"}});

  const SettledMessage settled = harness.deliver_until_settled(message_with_body("hello"));

  // The worker's retry policy: max_attempts = 5, exponential from 1 s.
  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::dead_lettered) << settled;
  ASSERT_EQ(settled.attempts.size(), 5u) << settled;
  EXPECT_EQ(settled.attempts[1].delay, std::chrono::seconds(2));
  EXPECT_EQ(settled.reason,
            "gave up after 5 attempts: warren::PublishError: "
            "NOT_FOUND - no exchange 'my_plugin.notifcations'");
}

TEST(MyPlugin, EmptyBody_IsDeadLetteredAtTheFirstAttemptWithTheReason) {
  Harness harness = loaded_plugin();

  const SettledMessage settled = harness.deliver_until_settled(message_with_body(""));

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::dead_lettered) << settled;
  EXPECT_EQ(settled.attempts.size(), 1u);
  EXPECT_EQ(settled.reason, "warren::PermanentError: empty body: nothing to handle");
}

TEST(MyPlugin, BodyOverMaxBodyBytes_IsDeadLettered) {
  Harness harness = loaded_plugin({{"max_body_bytes", "4"}});

  const Result result = harness.deliver(message_with_body("hello"));

  EXPECT_EQ(result.kind, Result::Kind::dead_letter) << result;
  EXPECT_EQ(result.error, Result::Error::permanent);
  EXPECT_EQ(result.reason, "body of 5 bytes exceeds max_body_bytes (4)");
}

TEST(MyPlugin, InvalidMaxBodyBytes_RefusesToStartNamingTheSetting) {
  try {
    loaded_plugin({{"max_body_bytes", "lots"}});
    FAIL() << "the constructor accepted max_body_bytes = \"lots\"";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("max_body_bytes must be a positive integer"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
