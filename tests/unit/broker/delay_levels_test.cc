// Specification of the retry delay levels' routing: the delay in binary, never rounded down.
#include "broker/delay_levels.h"

#include <gtest/gtest.h>

#include "transport/routing.h"

namespace warren::broker {
namespace {

using std::chrono::milliseconds;

TEST(DelayLevels, UnitsRoundUpSoADelayIsNeverShorter) {
  EXPECT_EQ(delay_units(milliseconds(0)), 0u);
  EXPECT_EQ(delay_units(milliseconds(1)), 1u);
  EXPECT_EQ(delay_units(milliseconds(100)), 1u);
  EXPECT_EQ(delay_units(milliseconds(101)), 2u);
  EXPECT_EQ(delay_units(milliseconds(1200)), 12u);
  EXPECT_EQ(delay_units(std::chrono::hours(24 * 400)), (1u << kDelayLevels) - 1);
}

TEST(DelayLevels, RoutingKeyIsTheDelayInBinaryThenTheQueue) {
  std::string expected;
  for (int level = kDelayLevels - 1; level >= 3; --level)
    expected += "0.";
  expected += "1.0.1.livraria.emails";  // 500 ms = 5 units = 101b
  EXPECT_EQ(delay_routing_key(milliseconds(500), "livraria.emails"), expected);
}

TEST(DelayLevels, EachLevelWaitsOnlyWhenItsBitIsSet) {
  const std::string key = delay_routing_key(milliseconds(500), "q");  // bits 0 and 2
  for (int level = 0; level < kDelayLevels; ++level) {
    const bool set = level == 0 || level == 2;
    EXPECT_EQ(transport::topic_matches(delay_bit_pattern(level, true), key), set) << level;
    EXPECT_EQ(transport::topic_matches(delay_bit_pattern(level, false), key), !set) << level;
  }
}

TEST(DelayLevels, DeliveryPatternMatchesOnlyItsQueue) {
  const std::string key = delay_routing_key(milliseconds(100), "livraria.emails");
  EXPECT_TRUE(transport::topic_matches(delay_delivery_pattern("livraria.emails"), key));
  EXPECT_FALSE(transport::topic_matches(delay_delivery_pattern("emails"), key));
  EXPECT_FALSE(transport::topic_matches(delay_delivery_pattern("livraria.ranking"), key));
}

}  // namespace
}  // namespace warren::broker
