// Harness::load: a plugin taken from its built .so through its WARREN_PLUGIN descriptor, with
// the host loader's checks (the fixture plugins of tests/fixtures).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "warren/testing/harness.h"

namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

std::string fixture(const std::string& name) {
  return std::string(WARREN_FIXTURE_PLUGIN_DIR) + "/lib" + name + ".so";
}

TEST(HarnessLoad, GoodPlugin_RunsThroughItsDescriptorWithItsSettings) {
  Harness harness = Harness::load(fixture("good"), {{"greeting", "hi"}}, "orders");

  EXPECT_STREQ(harness.descriptor().name, "good");
  EXPECT_STREQ(harness.descriptor().version, "1.2.3");
  TestMessage message;
  message.body = "echo-setting:greeting";
  EXPECT_EQ(harness.deliver(message).kind, Result::Kind::ack);
  const auto logs = harness.logs();
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].text, "good constructed for worker orders");
  EXPECT_EQ(logs[1].text, "greeting=hi");
}

TEST(HarnessLoad, NameThatDiffersFromTheFiles_IsRefusedWithTheLoadersReason) {
  EXPECT_THAT([] { Harness::load(fixture("name_mismatch")); },
              ThrowsMessage<std::runtime_error>(
                  HasSubstr("refused: it declares the name \"other\" but was loaded as "
                            "\"name_mismatch\"")));
}

TEST(HarnessLoad, OtherAbiMajor_IsRefusedWithTheLoadersReason) {
  EXPECT_THAT([] { Harness::load(fixture("abi_major_mismatch")); },
              ThrowsMessage<std::runtime_error>(HasSubstr("refused: built for Warren ABI")));
}

TEST(HarnessLoad, ConstructorThrowing_FailsNamingTheWorker) {
  EXPECT_THAT([] { Harness::load(fixture("constructor_throws"), {}, "emails"); },
              ThrowsMessage<std::runtime_error>(HasSubstr("worker 'emails'")));
}

TEST(HarnessLoad, MissingFile_IsRefusedSayingWhy) {
  EXPECT_THAT([] { Harness::load(fixture("does_not_exist")); },
              ThrowsMessage<std::runtime_error>(HasSubstr("libdoes_not_exist.so")));
}

TEST(HarnessLoad, FileNotNamedLikeAPlugin_IsRefused) {
  EXPECT_THAT([] { Harness::load("/tmp/plugin.so"); },
              ThrowsMessage<std::runtime_error>(HasSubstr("lib<name>.so")));
}

}  // namespace
