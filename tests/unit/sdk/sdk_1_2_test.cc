// What SDK 1.2 added, as a plugin author meets it: log_debug/log_trace and log_enabled, labelled
// metrics with their series bound, and non-mandatory publishes; in the harness, and against host
// tables that do not have them (an older host, or a host whose [log] level is above debug), where
// the SDK does what its headers promise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"
#include "warren/host_abi/host_table.h"
#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using warren::LogLevel;
using warren::testing::Harness;
using warren::testing::TestMessage;

// Logs at every level, counts by the x-locale header (and, with body "many", 150 locales), and
// publishes a notification without mandatory when the body says "notify".
class Notifier final : public warren::Handler {
 public:
  explicit Notifier(warren::PluginContext& ctx)
      : notes_(ctx.counter("notes_total", "Notes by locale", {"locale"})),
        debug_enabled_(ctx.log_enabled(LogLevel::debug)) {
    ctx.log_trace("worker trace");
    ctx.log_debug("worker debug");
    ctx.log_info("worker info");
  }

  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override {
    ctx.log_trace("message trace");
    ctx.log_debug("message debug");
    ctx.log_info("message info");
    if (msg.body() == "many") {
      for (int i = 0; i < 150; ++i)
        notes_.inc({"locale-" + std::to_string(i)});
    } else {
      const warren::Counter locale = notes_.labels({msg.header("x-locale").value_or("none")});
      locale.inc();
    }
    if (msg.body() == "notify") {
      warren::OutgoingMessage out;
      out.exchange = "notifications";
      out.routing_key = "note";
      out.body = "hello";
      out.mandatory = false;
      ctx.publish(out);
    }
    return warren::Outcome::ack();
  }

  // Public for the tests below.
  warren::LabelledCounter notes_;
  bool debug_enabled_;
};

TEST(Sdk1_2InTheHarness, DebugAndTraceLines_AreRecordedWithTheirLevels) {
  Harness harness = Harness::of<Notifier>();
  TestMessage message;
  message.message_id = "m-1";
  harness.deliver(message);

  std::vector<std::pair<LogLevel, std::string>> lines;
  for (const auto& line : harness.logs())
    lines.emplace_back(line.level, line.text);
  EXPECT_THAT(lines, ElementsAre(std::pair(LogLevel::trace, std::string("worker trace")),
                                 std::pair(LogLevel::debug, std::string("worker debug")),
                                 std::pair(LogLevel::info, std::string("worker info")),
                                 std::pair(LogLevel::trace, std::string("message trace")),
                                 std::pair(LogLevel::debug, std::string("message debug")),
                                 std::pair(LogLevel::info, std::string("message info"))));
}

TEST(Sdk1_2InTheHarness, LabelledCounter_RecordsBySeries) {
  Harness harness = Harness::of<Notifier>();
  TestMessage message;
  message.headers = {{"x-locale", "pt-BR"}};
  harness.deliver(message);
  harness.deliver(message);
  message.headers = {};
  harness.deliver(message);

  const auto metric = harness.metrics().at("warren_plugin_notes_total");
  EXPECT_THAT(metric.label_names, ElementsAre("locale"));
  EXPECT_EQ(metric.series.at({"pt-BR"}).sum(), 2);
  EXPECT_EQ(metric.series.at({"none"}).sum(), 1);
  EXPECT_THAT(metric.values, IsEmpty()) << "a labelled metric records only into its series";
}

TEST(Sdk1_2InTheHarness, PastOneHundredSeries_UpdatesGoToTheOverflowSeriesWithOneWarning) {
  Harness harness = Harness::of<Notifier>();
  TestMessage many;
  many.body = "many";
  harness.deliver(many);
  harness.deliver(many);

  const auto metric = harness.metrics().at("warren_plugin_notes_total");
  EXPECT_THAT(metric.series, SizeIs(101)) << "100 series and the overflow one";
  EXPECT_EQ(metric.series.at({"__overflow__"}).sum(), 100) << "50 locales past the bound, twice";
  int warnings = 0;
  for (const auto& line : harness.logs()) {
    if (line.level == LogLevel::warn) {
      ++warnings;
      EXPECT_THAT(line.text, HasSubstr("reached its limit of 100 series"));
    }
  }
  EXPECT_EQ(warnings, 1);
}

TEST(Sdk1_2InTheHarness, NotMandatoryPublish_IsRecordedAsNotMandatory) {
  Harness harness = Harness::of<Notifier>();
  TestMessage notify;
  notify.body = "notify";
  harness.deliver(notify);

  ASSERT_THAT(harness.published(), SizeIs(1));
  EXPECT_FALSE(harness.published()[0].mandatory);
}

TEST(Sdk1_2InTheHarness, WithTheHostsTopology_NotMandatoryPublishToAnUnboundExchangeSucceeds) {
  Harness harness = Harness::of<Notifier>();
  harness.use_config_text(R"(
[broker]
transport = "memory"

[[exchanges]]
name = "notifications"
type = "topic"
)");
  TestMessage notify;
  notify.body = "notify";

  EXPECT_EQ(harness.deliver(notify).kind, warren::testing::Result::Kind::ack)
      << "no queue is bound, and the publish is not mandatory: dropped, not an error";
  ASSERT_THAT(harness.routed(), SizeIs(1));
  EXPECT_THAT(harness.routed()[0].queues, IsEmpty());
}

// ---- Against host tables without the 1.2 features.

struct Captured {
  std::vector<std::pair<std::uint32_t, std::string>> logs;  // ABI level, text
  std::vector<std::string> metrics;                         // "<name> unlabelled|labelled"
  std::vector<double> recorded;
  std::vector<std::uint32_t> publish_flags;
  int log_enabled_calls = 0;
};
Captured captured;
int host_debug_enabled = 0;  // what plugin_log_enabled answers for debug and trace
int metric_handle = 0;

void capture_log(void*, std::uint32_t level, warren_str text) {
  captured.logs.emplace_back(level, std::string(warren::detail::from_abi(text)));
}
void capture_message_log(void*, std::uint32_t level, warren_str text) {
  capture_log(nullptr, level, text);
}
void* capture_metric(void*, std::uint32_t, warren_str name, warren_str, const double*, size_t) {
  captured.metrics.push_back(std::string(warren::detail::from_abi(name)) + " unlabelled");
  return &metric_handle;
}
void* capture_labelled_metric(void*, std::uint32_t, warren_str name, warren_str, const double*,
                              size_t, const warren_str*, size_t) {
  captured.metrics.push_back(std::string(warren::detail::from_abi(name)) + " labelled");
  return &metric_handle;
}
void* capture_series(void*, const warren_str*, size_t) {
  return &metric_handle;
}
void capture_record(void*, double value) {
  captured.recorded.push_back(value);
}
int capture_log_enabled(void*, std::uint32_t level) {
  ++captured.log_enabled_calls;
  return level == WARREN_LOG_DEBUG || level == WARREN_LOG_TRACE ? host_debug_enabled : 1;
}
int capture_publish(void*, const warren_publish_request* request, char*, size_t) {
  captured.publish_flags.push_back(request->flags);
  return 0;
}
int no_header(void*, warren_str, warren_str*) {
  return 0;
}
void ignore_report(void*, const warren_outcome*) {}

// The host table of this SDK with every call captured; `size` cuts it to an older minor's.
warren_host_api capturing_table(std::size_t size) {
  warren_host_api table = warren::host_abi::host_table();
  table.struct_size = static_cast<std::uint32_t>(size);
  table.plugin_log = &capture_log;
  table.message_log = &capture_message_log;
  table.plugin_metric = &capture_metric;
  table.metric_record = &capture_record;
  table.message_header = &no_header;
  table.message_publish = &capture_publish;
  table.message_report = &ignore_report;
  table.plugin_log_enabled = &capture_log_enabled;
  table.plugin_labelled_metric = &capture_labelled_metric;
  table.metric_series = &capture_series;
  return table;
}

// Constructs Notifier on `table` and handles one message of `body`; true when the handler
// believed debug was enabled.
bool run_notifier(const warren_host_api& table, std::string_view body) {
  captured = Captured{};
  const warren_plugin_descriptor descriptor =
      warren::detail::make_descriptor<Notifier>("notifier", "1.0");
  void* instance = descriptor.create(&table, nullptr, nullptr, 0);
  warren_message message{};
  message.struct_size = sizeof message;
  message.body = warren::detail::to_abi(body);
  descriptor.handle(instance, &message, nullptr);
  const bool debug =
      static_cast<warren::detail::Instance<Notifier>*>(instance)->handler.debug_enabled_;
  descriptor.destroy(instance);
  return debug;
}

TEST(Sdk1_2OnAnAbi1_1Host, DebugAndTraceAreNeverSentAndInfoIs) {
  const warren_host_api table = capturing_table(warren::detail::kHostApiV1_1Size);

  const bool debug_enabled = run_notifier(table, "anything");

  EXPECT_FALSE(debug_enabled);
  EXPECT_THAT(captured.logs,
              ElementsAre(std::pair(std::uint32_t{WARREN_LOG_INFO}, std::string("worker info")),
                          std::pair(std::uint32_t{WARREN_LOG_INFO}, std::string("message info"))))
      << "an ABI 1.1 host would read WARREN_LOG_DEBUG as a warning";
  EXPECT_EQ(captured.log_enabled_calls, 0) << "the 1.1 table has no plugin_log_enabled";
}

TEST(Sdk1_2OnAnAbi1_1Host, LabelledMetric_IsRegisteredAndRecordedUnlabelled) {
  const warren_host_api table = capturing_table(warren::detail::kHostApiV1_1Size);

  run_notifier(table, "anything");

  EXPECT_THAT(captured.metrics, ElementsAre("notes_total unlabelled"));
  EXPECT_THAT(captured.recorded, ElementsAre(1.0));
}

TEST(Sdk1_2OnAnAbi1_2Host, DebugLinesBelowTheHostsLevel_AreNotSent) {
  const warren_host_api table = capturing_table(sizeof(warren_host_api));

  host_debug_enabled = 0;
  EXPECT_FALSE(run_notifier(table, "anything"));
  EXPECT_THAT(captured.logs, SizeIs(2)) << "the info lines only";
  EXPECT_THAT(captured.metrics, ElementsAre("notes_total labelled"));

  host_debug_enabled = 1;
  EXPECT_TRUE(run_notifier(table, "anything"));
  EXPECT_THAT(captured.logs, SizeIs(6)) << "every line";
  EXPECT_EQ(captured.logs[0],
            std::pair(std::uint32_t{WARREN_LOG_TRACE}, std::string("worker trace")));
  EXPECT_EQ(captured.logs[4],
            std::pair(std::uint32_t{WARREN_LOG_DEBUG}, std::string("message debug")));
  host_debug_enabled = 0;
}

TEST(Sdk1_2OnAnAbi1_2Host, NotMandatoryPublish_SetsTheFlagAndMandatoryLeavesItZero) {
  const warren_host_api table = capturing_table(sizeof(warren_host_api));

  run_notifier(table, "notify");

  EXPECT_THAT(captured.publish_flags, ElementsAre(std::uint32_t{WARREN_PUBLISH_NOT_MANDATORY}));
}

}  // namespace
