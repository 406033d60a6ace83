// Byte sizes (memory_max): what parse_byte_size accepts and refuses, and how format_byte_size
// writes them.
#include "config/byte_size.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace warren::config {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t bytes_of(std::string_view text) {
  const ParsedByteSize parsed = parse_byte_size(text);
  EXPECT_EQ(parsed.problem, ParsedByteSize::Problem::none) << text;
  return parsed.bytes;
}

ParsedByteSize::Problem problem_of(std::string_view text) {
  return parse_byte_size(text).problem;
}

TEST(ByteSize_Parse, BinaryUnits_ArePowersOf1024) {
  EXPECT_EQ(bytes_of("100KiB"), 100ULL * 1024);
  EXPECT_EQ(bytes_of("512MiB"), 512ULL * 1024 * 1024);
  EXPECT_EQ(bytes_of("1GiB"), 1ULL << 30);
  EXPECT_EQ(bytes_of("2TiB"), 2ULL << 40);
}

TEST(ByteSize_Parse, DecimalUnits_ArePowersOf1000) {
  EXPECT_EQ(bytes_of("100KB"), 100'000ULL);
  EXPECT_EQ(bytes_of("64MB"), 64'000'000ULL);
  EXPECT_EQ(bytes_of("2GB"), 2'000'000'000ULL);
  EXPECT_EQ(bytes_of("3TB"), 3'000'000'000'000ULL);
}

TEST(ByteSize_Parse, NoUnitOrB_IsBytes) {
  EXPECT_EQ(bytes_of("1048576"), 1048576ULL);
  EXPECT_EQ(bytes_of("1048576B"), 1048576ULL);
  EXPECT_EQ(bytes_of("0"), 0ULL);
}

TEST(ByteSize_Parse, TheLargest64BitValue_IsRead) {
  EXPECT_EQ(bytes_of("18446744073709551615"), kMax);
  EXPECT_EQ(bytes_of("16777215TiB"), 16777215ULL << 40);
}

TEST(ByteSize_Parse, PastSixtyFourBits_IsTooLarge) {
  EXPECT_EQ(problem_of("18446744073709551616"), ParsedByteSize::Problem::too_large);
  EXPECT_EQ(problem_of("16777216TiB"), ParsedByteSize::Problem::too_large);
  EXPECT_EQ(problem_of("99999999999999999999999GB"), ParsedByteSize::Problem::too_large);
}

TEST(ByteSize_Parse, UnknownUnitsSignsSpacesFractionsAndEmpty_AreMalformed) {
  for (const std::string_view text :
       {"", "MiB", "512mib", "512M", "512Mi", "1.5GiB", "-1MiB", "+1MiB", " 1MiB", "1 MiB", "1MiB ",
        "1MiB1KiB", "1EiB", "1kb", "99999999999999999999999x"}) {
    EXPECT_EQ(problem_of(text), ParsedByteSize::Problem::malformed) << '"' << text << '"';
  }
}

TEST(ByteSize_Format, UsesTheLargestUnitThatDividesExactly_BinaryFirst) {
  EXPECT_EQ(format_byte_size(512ULL * 1024 * 1024), "512MiB");
  EXPECT_EQ(format_byte_size(1ULL << 30), "1GiB");
  EXPECT_EQ(format_byte_size(64'000'000), "64MB");
  EXPECT_EQ(format_byte_size(1000), "1KB");
  EXPECT_EQ(format_byte_size(1500), "1500B");
  EXPECT_EQ(format_byte_size(0), "0B");
}

TEST(ByteSize_Format, ReadsBackToTheSameValue) {
  for (const std::uint64_t bytes : {std::uint64_t{1}, std::uint64_t{1024}, std::uint64_t{1000},
                                    std::uint64_t{1024000}, std::uint64_t{3} << 50, kMax}) {
    EXPECT_EQ(bytes_of(format_byte_size(bytes)), bytes) << bytes;
  }
}

}  // namespace
}  // namespace warren::config
