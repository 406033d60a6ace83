// The header helpers every transport republishes with (transport.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "transport/transport.h"

namespace warren::transport {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(SetHeader, ReplacesAnExistingValueInPlaceOrAppends) {
  TextHeaders headers{{"a", "1"}, {"x-warren-attempt", "2"}};
  set_header(headers, "x-warren-attempt", "3");
  set_header(headers, "b", "4");
  EXPECT_THAT(headers, ElementsAre(Pair("a", "1"), Pair("x-warren-attempt", "3"), Pair("b", "4")));
}

TEST(SetHeaderIfAbsent, KeepsAnExistingValue) {
  TextHeaders headers{{"traceparent", "kept"}};
  set_header_if_absent(headers, "traceparent", "new");
  set_header_if_absent(headers, "x-warren-first-failed-at", "now");
  EXPECT_THAT(headers,
              ElementsAre(Pair("traceparent", "kept"), Pair("x-warren-first-failed-at", "now")));
}

bool drop_x_death(std::string_view name) {
  return name == "x-death";
}

TEST(RepublishedCopy, CarriesBodyTypeIdWirePropertiesAndTheHeadersNotDropped) {
  InboundMessage original;
  original.exchange = "orders";
  original.routing_key = "order.created";
  original.body = "{}";
  original.content_type = "application/json";
  original.message_id = "m-1";
  original.headers = {{"x-death", "..."}, {"traceparent", "t"}};
  original.wire_properties = std::string("\x01\x00opaque", 8);

  const OutboundMessage copy = republished_copy(original, drop_x_death);

  EXPECT_EQ(copy.body, "{}");
  EXPECT_EQ(copy.content_type, "application/json");
  EXPECT_EQ(copy.message_id, "m-1");
  EXPECT_EQ(copy.wire_properties, original.wire_properties)
      << "the properties and typed headers the transport keeps for a copy";
  EXPECT_THAT(copy.headers, ElementsAre(Pair("traceparent", "t")));
  EXPECT_EQ(copy.exchange, "") << "where the copy goes is the caller's choice";
  EXPECT_EQ(copy.routing_key, "");
}

}  // namespace
}  // namespace warren::transport
