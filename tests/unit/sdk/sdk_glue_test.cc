// The SDK's glue as the plugin's side of the ABI sees it: what it puts on the wire (one encoding
// of "dead-letter", returned or thrown), the host tables it refuses, WARREN_HOST_HAS, and the
// raw-pointer constructors a handler cannot reach.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"
#include "warren/host_abi/host_table.h"
#include "warren/sdk.h"

namespace {

// What the plugin reported, copied off the wire.
struct Wire {
  std::uint32_t kind = 0;
  std::string reason;
  std::uint32_t error_kind = 0;
  std::string error_type;
};
Wire last_report;

void capture_report(void*, const warren_outcome* outcome) {
  last_report =
      Wire{outcome->kind, std::string(warren::detail::from_abi(outcome->reason)),
           outcome->error_kind, std::string(warren::detail::from_abi(outcome->error_type))};
}

// Returns Outcome::dead_letter for "return", throws PermanentError for "throw".
class Rejecting final : public warren::Handler {
 public:
  explicit Rejecting(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context&) override {
    if (msg.body() == "throw")
      throw warren::PermanentError("price is negative");
    return warren::Outcome::dead_letter("price is negative");
  }
};

Wire report_of(std::string_view body) {
  warren_host_api table = warren::host_abi::host_table();
  table.message_report = &capture_report;
  const warren_plugin_descriptor descriptor =
      warren::detail::make_descriptor<Rejecting>("rejecting", "1.0");
  void* instance = descriptor.create(&table, nullptr, nullptr, 0);
  warren_message message{};
  message.struct_size = sizeof message;
  message.body = warren::detail::to_abi(body);
  descriptor.handle(instance, &message, nullptr);
  descriptor.destroy(instance);
  return last_report;
}

TEST(SdkGlue, DeadLetterReturnedOrThrown_IsOneOutcomeKindOnTheWire) {
  const Wire returned = report_of("return");
  const Wire thrown = report_of("throw");

  EXPECT_EQ(returned.kind, static_cast<std::uint32_t>(WARREN_OUTCOME_DEAD_LETTER));
  EXPECT_EQ(thrown.kind, static_cast<std::uint32_t>(WARREN_OUTCOME_DEAD_LETTER));
  EXPECT_EQ(returned.reason, thrown.reason);
  EXPECT_EQ(returned.error_kind, static_cast<std::uint32_t>(WARREN_ERROR_NONE));
  EXPECT_EQ(thrown.error_kind, static_cast<std::uint32_t>(WARREN_ERROR_PERMANENT))
      << "only how the handler got there differs";
  EXPECT_EQ(thrown.error_type, typeid(warren::PermanentError).name());
}

TEST(SdkGlue, PermanentError_StandsForItsDeadLetterOutcome) {
  const warren::Outcome outcome = warren::PermanentError("bad json").outcome();
  EXPECT_EQ(outcome.kind(), warren::Outcome::Kind::dead_letter);
  EXPECT_EQ(outcome.reason(), "bad json");
}

int constructed = 0;
class Counted final : public warren::Handler {
 public:
  explicit Counted(warren::PluginContext&) { ++constructed; }
  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    return warren::Outcome::ack();
  }
};

TEST(SdkGlue, HostTableSmallerThanAbi1_0_IsRefusedBeforeTheHandlerIsBuilt) {
  warren_host_api table = warren::host_abi::host_table();
  table.struct_size = warren::detail::kHostApiV1_0Size - 1;
  const warren_plugin_descriptor descriptor =
      warren::detail::make_descriptor<Counted>("counted", "1.0");
  char error[128] = {};
  constructed = 0;

  EXPECT_EQ(descriptor.create(&table, nullptr, error, sizeof error), nullptr);
  EXPECT_STREQ(error, "the host's table is smaller than Warren ABI 1.0's");
  EXPECT_EQ(descriptor.create(nullptr, nullptr, error, sizeof error), nullptr);
  EXPECT_STREQ(error, "the host passed no host table");
  table = warren::host_abi::host_table();
  table.abi_major = WARREN_ABI_MAJOR + 1;
  EXPECT_EQ(descriptor.create(&table, nullptr, error, sizeof error), nullptr);
  EXPECT_STREQ(error, "host ABI major version differs from the plugin's");
  EXPECT_EQ(constructed, 0);
}

// WARREN_HOST_HAS names the `host_` of the code using it, as the SDK's wrappers do.
struct Wrapper {
  const warren_host_api* host_;
  bool has_report() const { return WARREN_HOST_HAS(message_report); }
  bool has_log() const { return WARREN_HOST_HAS(plugin_log); }
};

TEST(SdkGlue, HostHas_IsTrueOnlyForACallbackTheTableCarries) {
  warren_host_api table = warren::host_abi::host_table();
  EXPECT_TRUE((Wrapper{&table}.has_report()));
  EXPECT_TRUE((Wrapper{&table}.has_log()));

  table.struct_size = offsetof(warren_host_api, message_report);  // a table from before it
  EXPECT_FALSE((Wrapper{&table}.has_report()));
  EXPECT_TRUE((Wrapper{&table}.has_log()));

  table = warren::host_abi::host_table();
  table.message_report = nullptr;  // long enough, but not filled in
  EXPECT_FALSE((Wrapper{&table}.has_report()));
  EXPECT_FALSE((Wrapper{nullptr}.has_report()));
}

// Only the SDK's glue turns raw host pointers into the objects a handler sees.
template <class T>
concept ExposesHostApi = requires(const T& object) {
  object.host_api();
};

static_assert(!std::is_constructible_v<warren::PluginContext, const warren_host_api*, void*>);
static_assert(!std::is_constructible_v<warren::Context, const warren_host_api*, void*,
                                       const warren::PluginContext&>);
static_assert(!std::is_constructible_v<warren::Message, const warren_host_api*,
                                       const warren_message*, void*>);
static_assert(!std::is_constructible_v<warren::Counter, const warren_host_api*, void*>);
static_assert(!std::is_constructible_v<warren::Gauge, const warren_host_api*, void*>);
static_assert(!std::is_constructible_v<warren::Histogram, const warren_host_api*, void*>);
static_assert(!ExposesHostApi<warren::PluginContext>);
static_assert(std::is_default_constructible_v<warren::Counter>,
              "a handle that records nothing can still be declared and assigned later");

}  // namespace
