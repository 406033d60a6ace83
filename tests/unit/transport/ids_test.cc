// Random ids: trace and span ids (random_hex) and message ids (random_uuid).
#include "transport/ids.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace warren::transport {
namespace {

bool lower_hex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST(RandomHex, TwoDigitsPerByte_LowercaseHex_NeverAllZero) {
  for (std::size_t bytes : {1u, 4u, 8u, 9u, 16u}) {
    const std::string id = random_hex(bytes);
    EXPECT_EQ(id.size(), 2 * bytes) << id;
    EXPECT_TRUE(lower_hex(id)) << id;
    EXPECT_NE(id, std::string(2 * bytes, '0'));
  }
  EXPECT_EQ(random_hex(0), "");
}

TEST(RandomHex, TraceIds_AreDistinct_AndTheirHalvesComeFromDifferentDraws) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = random_hex(16);
    EXPECT_NE(id.substr(0, 16), id.substr(16)) << "both halves from one 64-bit draw: " << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(RandomUuid, Version4AndVariantBits) {
  const std::string id = random_uuid();
  ASSERT_EQ(id.size(), 36u) << id;
  EXPECT_EQ(id[14], '4') << id;
  EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;
  EXPECT_NE(random_uuid(), id);
}

}  // namespace
}  // namespace warren::transport
