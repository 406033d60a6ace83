// The harness itself: constructing handlers (and failing to), refusing foreign descriptors,
// destroying the instance, and catching a plugin that breaks the one-outcome rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

class NeedsOutDir final : public warren::Handler {
 public:
  explicit NeedsOutDir(warren::PluginContext& ctx) {
    if (!ctx.setting("out_dir"))
      throw std::invalid_argument("setting 'out_dir' is required");
  }
  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    return warren::Outcome::ack();
  }
};

TEST(Harness, ConstructorThrowing_FailsWithThePluginsReasonAndTheWorkerName) {
  EXPECT_THAT([] { Harness::of<NeedsOutDir>({}, "emails"); },
              ThrowsMessage<std::runtime_error>(
                  AllOf(HasSubstr("setting 'out_dir' is required"), HasSubstr("worker 'emails'"))));
}

TEST(Harness, ConstructorSucceeding_WithItsSetting) {
  Harness harness = Harness::of<NeedsOutDir>({{"out_dir", "/tmp"}});
  EXPECT_EQ(harness.deliver(TestMessage{}).kind, Result::Kind::ack);
}

class ThrowsInt final : public warren::Handler {
 public:
  explicit ThrowsInt(warren::PluginContext&) { throw 7; }
  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    return warren::Outcome::ack();
  }
};

TEST(Harness, ConstructorThrowingNonStd_FailsSayingSo) {
  EXPECT_THAT([] { Harness::of<ThrowsInt>(); },
              ThrowsMessage<std::runtime_error>(HasSubstr("non-std exception")));
}

// Counts its constructions and destructions. The counts live on from test to test, so a test
// compares them with what they were when it began (Counted::Since): its result must not depend
// on which tests ran before it in the same process.
class Counted final : public warren::Handler {
 public:
  static inline int constructed = 0;
  static inline int destroyed = 0;
  explicit Counted(warren::PluginContext&) { ++constructed; }
  ~Counted() override { ++destroyed; }
  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    return warren::Outcome::ack();
  }

  // Constructions and destructions since this object was made.
  struct Since {
    int constructed_at = Counted::constructed;
    int destroyed_at = Counted::destroyed;
    int constructions() const { return Counted::constructed - constructed_at; }
    int destructions() const { return Counted::destroyed - destroyed_at; }
  };
};

TEST(Harness, Instance_IsDestroyedWithTheHarnessAndSurvivesAMove) {
  const Counted::Since counts;
  {
    Harness first = Harness::of<Counted>();
    Harness second = std::move(first);
    EXPECT_EQ(counts.constructions(), 1);
    EXPECT_EQ(counts.destructions(), 0);
    EXPECT_EQ(second.deliver(TestMessage{}).kind, Result::Kind::ack);
  }
  EXPECT_EQ(counts.constructions(), 1);
  EXPECT_EQ(counts.destructions(), 1);
}

TEST(Harness, DescriptorOfAnotherAbiMajor_IsRefusedNamingBothVersions) {
  const Counted::Since counts;
  warren_plugin_descriptor descriptor = warren::detail::make_descriptor<Counted>("old", "1.0");
  descriptor.abi_major = WARREN_ABI_MAJOR + 1;
  EXPECT_THAT([&] { Harness(descriptor, {}); },
              ThrowsMessage<std::runtime_error>(
                  AllOf(HasSubstr("plugin 'old' refused"),
                        HasSubstr("built for Warren ABI 2.x, this host speaks 1.x"))));
  EXPECT_EQ(counts.constructions(), 0) << "nothing of a refused plugin runs";
}

TEST(Harness, DescriptorOfANewerAbiMinor_IsRefused) {
  const Counted::Since counts;
  warren_plugin_descriptor descriptor = warren::detail::make_descriptor<Counted>("new", "1.0");
  descriptor.abi_minor = WARREN_ABI_MINOR + 1;
  EXPECT_THROW(Harness(descriptor, {}), std::runtime_error);
  EXPECT_EQ(counts.constructions(), 0) << "nothing of a refused plugin runs";
}

void report_nothing(void*, const warren_message*, void*) {}

TEST(Harness, PluginReportingNoOutcome_IsABrokenPluginNotAnAck) {
  warren_plugin_descriptor descriptor = warren::detail::make_descriptor<Counted>("silent", "1.0");
  descriptor.handle = &report_nothing;
  Harness harness(descriptor, {});
  TestMessage m;
  m.message_id = "m-9";
  EXPECT_THAT([&] { harness.deliver(m); },
              ThrowsMessage<std::logic_error>(HasSubstr("reported 0 outcomes for message 'm-9'")));
}

}  // namespace
