// The pedido.registrado contract: what parses, and how every kind of bad body is refused
// (as a PermanentError naming the field, so the message is dead-lettered, not retried forever).
#include "order_placed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "order_placed_samples.h"
#include "warren/errors.h"

namespace {

using livraria::parse_order_placed;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::test_support::event_id;
using warren::test_support::order_placed_json;

void expect_refused(const std::string& body, const std::string& why) {
  EXPECT_THAT([&] { parse_order_placed(body); },
              ThrowsMessage<warren::PermanentError>(HasSubstr(why)))
      << body;
}

TEST(OrderPlaced, ValidBody_ParsesEveryField) {
  const auto order = parse_order_placed(order_placed_json(event_id(1), 42, {{7, 2, 39.9}, {3, 1}}));
  EXPECT_EQ(order.event_id, "00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(order.order_id, 42);
  EXPECT_EQ(order.customer_id, "c-17");
  EXPECT_DOUBLE_EQ(order.total, 89.8);
  ASSERT_EQ(order.items.size(), 2u);
  EXPECT_EQ(order.items[0].product_id, 7);
  EXPECT_EQ(order.items[0].quantity, 2);
  EXPECT_DOUBLE_EQ(order.items[0].unit_price, 39.9);
  EXPECT_EQ(order.occurred_at, "2025-03-01T12:00:00Z");
}

TEST(OrderPlaced, OptionalOccurredAtAndUnknownFields_AreAccepted) {
  const auto order = parse_order_placed(
      R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1, "customer_id": "c",
          "total": 0, "items": [], "gift_wrap": {"paper": "blue"}})");
  EXPECT_FALSE(order.occurred_at.has_value());
  EXPECT_TRUE(order.items.empty());
}

// docs/contracts.md: an event published before sales_channel and version existed (still queued
// when the new consumer starts) is read with their defaults, not refused.
TEST(OrderPlaced, EventOfTheFirstRelease_GetsTheDefaultsOfTheFieldsAddedSince) {
  const auto order = parse_order_placed(order_placed_json(event_id(1), 42, {{7, 2}}));
  EXPECT_EQ(order.sales_channel, "unknown");
  EXPECT_EQ(order.version, 1);
}

TEST(OrderPlaced, SalesChannelAndVersion1_AreRead) {
  const auto order = parse_order_placed(
      R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1, "customer_id": "c",
          "total": 0, "items": [], "sales_channel": "app", "version": 1})");
  EXPECT_EQ(order.sales_channel, "app");
  EXPECT_EQ(order.version, 1);
}

TEST(OrderPlaced, EmptyOrNullSalesChannel_IsUnknown) {
  for (const char* channel : {R"("")", "null"}) {
    const auto order = parse_order_placed(
        std::string(R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1,
                        "customer_id": "c", "total": 0, "items": [], "sales_channel": )") +
        channel + "}");
    EXPECT_EQ(order.sales_channel, "unknown") << channel;
  }
}

TEST(OrderPlaced, NewerMajorVersion_IsRefusedSayingWhichVersionsAreRead) {
  expect_refused(R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1,
                     "customer_id": "c", "total": 1, "items": [], "version": 2})",
                 "version 2 of the contract is newer than this consumer reads (version 1)");
  // Refused for its version even when its other fields no longer look like version 1's.
  expect_refused(R"({"version": 3, "order": {"id": 1}})", "version 3 of the contract is newer");
}

TEST(OrderPlaced, MistypedOrZeroVersion_IsRefused) {
  expect_refused(R"({"version": "2"})", "field 'version' must be an integer");
  expect_refused(R"({"version": 0})", "field 'version' must be at least 1");
}

TEST(OrderPlaced, MalformedJson_IsRefusedWithTheParseError) {
  expect_refused(R"({"event_id": )", "body is not valid JSON: [json.exception.parse_error.101]");
}

TEST(OrderPlaced, NonObjectBody_IsRefused) {
  expect_refused("[1, 2]", "must be a JSON object");
}

TEST(OrderPlaced, MissingField_IsRefusedNamingIt) {
  expect_refused(R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1,
                     "total": 1, "items": []})",
                 "field 'customer_id' is missing");
}

TEST(OrderPlaced, MistypedItemField_IsRefusedWithItsPath) {
  expect_refused(R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1,
                     "customer_id": "c", "total": 1,
                     "items": [{"product_id": 1, "quantity": 1, "unit_price": 1},
                               {"product_id": "7", "quantity": 1, "unit_price": 1}]})",
                 "field 'items[1].product_id' must be an integer, got \"7\"");
}

TEST(OrderPlaced, NonPositiveQuantity_IsRefused) {
  expect_refused(order_placed_json(event_id(1), 1, {{7, 0}}),
                 "field 'items[0].quantity' must be at least 1");
}

TEST(OrderPlaced, EventIdThatIsNotAUuid_IsRefused_ItWouldNameFiles) {
  expect_refused(order_placed_json("../../etc/passwd", 1, {{7, 1}}),
                 "field 'event_id' must be a UUID");
}

TEST(OrderPlaced, ControlCharactersInCustomerId_AreRefused) {
  expect_refused(R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1,
                     "customer_id": "c\r\nBcc: x", "total": 1, "items": []})",
                 "field 'customer_id' contains control characters");
}

}  // namespace
