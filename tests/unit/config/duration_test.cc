// Duration strings: what parse_duration accepts and refuses, and how format_duration writes them.
#include "config/duration.h"

#include <chrono>
#include <limits>

#include <gtest/gtest.h>

namespace warren::config {
namespace {

using namespace std::chrono_literals;

TEST(Duration_Parse, EachUnit_IsReadInMilliseconds) {
  EXPECT_EQ(parse_duration("250ms"), Duration(250));
  EXPECT_EQ(parse_duration("30s"), Duration(30s));
  EXPECT_EQ(parse_duration("5m"), Duration(5min));
  EXPECT_EQ(parse_duration("2h"), Duration(2h));
  EXPECT_EQ(parse_duration("7d"), Duration(7 * 24h));
  EXPECT_EQ(parse_duration("0s"), Duration::zero());
}

TEST(Duration_Parse, CompoundLargestUnitFirst_IsTheSum) {
  EXPECT_EQ(parse_duration("1m30s"), Duration(90s));
  EXPECT_EQ(parse_duration("1d2h3m4s5ms"), Duration(24h + 2h + 3min + 4s + 5ms));
}

TEST(Duration_Parse, MissingOrUnknownUnit_IsRefused) {
  EXPECT_EQ(parse_duration("30"), std::nullopt);
  EXPECT_EQ(parse_duration("30sec"), std::nullopt);
  EXPECT_EQ(parse_duration("1w"), std::nullopt);
  EXPECT_EQ(parse_duration("1m30"), std::nullopt);
}

TEST(Duration_Parse, SignsSpacesFractionsAndEmpty_AreRefused) {
  EXPECT_EQ(parse_duration("-5s"), std::nullopt);
  EXPECT_EQ(parse_duration("+5s"), std::nullopt);
  EXPECT_EQ(parse_duration(" 5s"), std::nullopt);
  EXPECT_EQ(parse_duration("5 s"), std::nullopt);
  EXPECT_EQ(parse_duration("1.5s"), std::nullopt);
  EXPECT_EQ(parse_duration(""), std::nullopt);
  EXPECT_EQ(parse_duration("s"), std::nullopt);
}

TEST(Duration_Parse, RepeatedOrAscendingUnits_AreRefused) {
  EXPECT_EQ(parse_duration("30s1m"), std::nullopt);
  EXPECT_EQ(parse_duration("1s1s"), std::nullopt);
  EXPECT_EQ(parse_duration("1ms1s"), std::nullopt);
}

TEST(Duration_Parse, TotalBeyondMilliseconds64Bits_IsRefused) {
  EXPECT_EQ(parse_duration("9223372036854775807ms"),
            Duration(std::numeric_limits<std::int64_t>::max()));
  EXPECT_EQ(parse_duration("9223372036854775808ms"), std::nullopt);
  EXPECT_NE(parse_duration("106751991167d7h"), std::nullopt);
  EXPECT_EQ(parse_duration("106751991168d"), std::nullopt);
  EXPECT_EQ(parse_duration("106751991167d8h"), std::nullopt);
}

TEST(Duration_Format, WritesTheShortestCompoundForm) {
  EXPECT_EQ(format_duration(Duration::zero()), "0s");
  EXPECT_EQ(format_duration(Duration(250)), "250ms");
  EXPECT_EQ(format_duration(Duration(90s)), "1m30s");
  EXPECT_EQ(format_duration(Duration(7 * 24h)), "7d");
  EXPECT_EQ(format_duration(Duration(1500)), "1s500ms");
  EXPECT_EQ(format_duration(Duration(-2000)), "-2s");
}

TEST(Duration_Format, ParsesBackToTheSameValue) {
  for (const Duration value : {Duration(1), Duration(999), Duration(61s), Duration(25h + 1ms)}) {
    EXPECT_EQ(parse_duration(format_duration(value)), value) << format_duration(value);
  }
}

}  // namespace
}  // namespace warren::config
