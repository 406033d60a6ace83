// to_outbound_message: an outbox row becomes a persistent, mandatory message with its own id.
#include "outbox/outbox_row.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace warren::outbox {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

OutboxRow sample() {
  OutboxRow row;
  row.id = "7d1e0c55-8a7e-4bd5-9d8e-2f0b3c3c1a11";
  row.exchange = "livraria.eventos";
  row.routing_key = "pedido.registrado";
  row.message_id = "evt-42";
  row.content_type = "application/json";
  row.headers_json = R"({"x-tenant": "acme", "x-version": 2, "x-flag": true})";
  row.payload = std::string("{\"order_id\":42}\0tail", 20);
  return row;
}

TEST(OutboxRowMessage, Row_BecomesPersistentMandatoryMessageWithItsIdTypeAndBody) {
  const auto message = to_outbound_message(sample(), "default.exchange");
  EXPECT_EQ(message.exchange, "livraria.eventos");
  EXPECT_EQ(message.routing_key, "pedido.registrado");
  EXPECT_EQ(message.message_id, "evt-42");
  EXPECT_EQ(message.content_type, "application/json");
  EXPECT_EQ(message.body, sample().payload);  // binary-safe, NUL included
  EXPECT_TRUE(message.persistent);
  EXPECT_TRUE(message.mandatory);
}

TEST(OutboxRowMessage, JsonHeaders_BecomeTextHeadersWithNonStringsAsJson) {
  const auto message = to_outbound_message(sample(), "");
  EXPECT_THAT(message.headers, ElementsAre(Pair("x-flag", "true"), Pair("x-tenant", "acme"),
                                           Pair("x-version", "2")));
}

TEST(OutboxRowMessage, RowWithoutExchange_GoesToTheOutboxDefault) {
  OutboxRow row = sample();
  row.exchange.clear();
  EXPECT_EQ(to_outbound_message(row, "default.exchange").exchange, "default.exchange");
}

// The publisher gives a message without an id a fresh random one at each publish: a row written
// with message_id = '' must still carry one id across its attempts, or consumers that deduplicate
// on it would apply a retried row twice.
TEST(OutboxRowMessage, RowWithEmptyMessageId_IsPublishedWithTheRowIdEveryAttempt) {
  OutboxRow row = sample();
  row.message_id.clear();
  EXPECT_EQ(to_outbound_message(row, "").message_id, row.id);
  EXPECT_EQ(to_outbound_message(row, "").message_id, to_outbound_message(row, "").message_id);
}

TEST(OutboxRowMessage, HeadersThatAreNotAnObject_AreRefusedNamingTheRow) {
  OutboxRow row = sample();
  row.headers_json = "[1, 2]";
  try {
    to_outbound_message(row, "");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(row.id));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("JSON object"));
  }
}

}  // namespace
}  // namespace warren::outbox
