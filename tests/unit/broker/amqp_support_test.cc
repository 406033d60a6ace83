// Specification of the rabbitmq-c helpers: header rendering, attempts, conflict messages.
#include <gtest/gtest.h>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/inbound_delivery.h"

namespace warren::broker {
namespace {

TEST(AmqpTable, BuiltTableRendersBackAsText) {
  AmqpTableBuilder builder;
  builder.add("name", std::string_view("value"))
      .add("count", std::int64_t{42})
      .add("flag", true)
      .add("ratio", 0.5);
  const auto headers = render_headers(builder.table());
  ASSERT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers[0], (std::pair<std::string, std::string>{"name", "value"}));
  EXPECT_EQ(headers[1].second, "42");
  EXPECT_EQ(headers[2].second, "true");
  EXPECT_EQ(headers[3].second, "0.5");
}

TEST(AttemptOf, MissingOrMalformedHeader_IsTheFirstAttempt) {
  EXPECT_EQ(attempt_of({}), 1u);
  EXPECT_EQ(attempt_of({{"x-warren-attempt", "3"}}), 3u);
  EXPECT_EQ(attempt_of({{"x-warren-attempt", "0"}}), 1u);
  EXPECT_EQ(attempt_of({{"x-warren-attempt", "3x"}}), 1u);
  EXPECT_EQ(attempt_of({{"x-warren-attempt", "-2"}}), 1u);
}

TEST(ShowOriginalRoute, FromTheDelayLevelsOrTheDefaultExchange_TheHandlerSeesTheFirstRoute) {
  const transport::TextHeaders original = {{"x-warren-original-exchange", "orders"},
                                           {"x-warren-original-routing-key", "order.created"}};
  for (const std::string via : {"warren.delay.delivery", ""}) {
    transport::InboundMessage message;
    message.exchange = via;
    message.routing_key = "livraria.emails";
    message.headers = original;
    show_original_route(message);
    EXPECT_EQ(message.exchange, "orders") << "via '" << via << "'";
    EXPECT_EQ(message.routing_key, "order.created");
  }
  transport::InboundMessage direct;
  direct.exchange = "elsewhere";
  direct.routing_key = "k";
  direct.headers = original;
  show_original_route(direct);
  EXPECT_EQ(direct.exchange, "elsewhere") << "published there by someone: as it came";
  EXPECT_EQ(direct.routing_key, "k");
}

TEST(PreconditionFailed, InequivalentArgument_NamesQueueArgumentAndBothValues) {
  const std::string text = explain_precondition_failed(
      "inequivalent arg 'x-queue-type' for queue 'livraria.emails' in vhost '/': received "
      "'quorum' but current is 'classic'");
  EXPECT_NE(text.find("queue 'livraria.emails'"), std::string::npos) << text;
  EXPECT_NE(text.find("x-queue-type = 'classic'"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for 'quorum'"), std::string::npos) << text;
  EXPECT_NE(text.find("rabbitmqctl delete_queue livraria.emails"), std::string::npos) << text;
}

TEST(PreconditionFailed, TypedAndMissingValues_AreShownPlainly) {
  const std::string text = explain_precondition_failed(
      "inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': received the value 'quorum' "
      "of type 'longstr' but current is none");
  EXPECT_NE(text.find("x-queue-type = none (a classic queue)"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for 'quorum'."), std::string::npos) << text;
}

TEST(PreconditionFailed, OtherTexts_AreKept) {
  EXPECT_EQ(explain_precondition_failed("something else"), "something else");
}

TEST(AmqpErrors, ChannelClosedForConsumerTimeout_NamesTheConfigMistakeAndTheFix) {
  const std::string text = explain_channel_close(
      "PRECONDITION_FAILED - delivery acknowledgement on channel 2 timed out. Timeout value used: "
      "5000 ms. This timeout value can be configured, see consumers doc guide to learn more");
  EXPECT_NE(text.find("timed out. Timeout value used: 5000 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("longer than the broker's consumer_timeout"), std::string::npos) << text;
  EXPECT_NE(text.find("Raise consumer_timeout on the broker"), std::string::npos) << text;
  EXPECT_NE(text.find("max_handler_time"), std::string::npos) << text;
  EXPECT_EQ(explain_channel_close("NOT_FOUND - no queue 'q'"), "NOT_FOUND - no queue 'q'");
}

}  // namespace
}  // namespace warren::broker
