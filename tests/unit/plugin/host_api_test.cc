// The warren_host_api table of the shared ABI adapter (host_abi::host_table, which the host and
// the test harness both hand to plugins), called directly as a plugin would (including a careless
// one): it checks and converts what a plugin passes and forwards to the services.
#include "warren/host_abi/host_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fake_services.h"
#include "named_scopes.h"
#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"
#include "warren/host_abi/services.h"

namespace warren::plugin {
namespace {

using detail::from_abi;
using host_abi::MessageServices;
using host_abi::ReportedOutcome;
using host_abi::WorkerServices;
using ::testing::AllOf;
using testing::destroy_named_scope;
using testing::destroyed_scopes;
using ::testing::ElementsAre;
using testing::FakeMessageServices;
using testing::FakeWorkerServices;
using ::testing::Field;
using ::testing::HasSubstr;
using testing::LogLine;
using ::testing::SizeIs;

warren_str abi(std::string_view text) {
  return detail::to_abi(text);
}

auto log_line(LogLevel level, const std::string& line) {
  return AllOf(Field(&LogLine::level, level), Field(&LogLine::text, line));
}

// The handles exactly as HandlerInstance passes them: pointers to the interface types.
void* host_plugin(WorkerServices& services) {
  return &services;
}
void* host_message(MessageServices& services) {
  return &services;
}

warren_publish_request publish_request() {
  warren_publish_request request{};
  request.struct_size = sizeof request;
  request.exchange = abi("orders");
  request.routing_key = abi("order.created");
  request.body = abi("{}");
  return request;
}

class HostApiTest : public ::testing::Test {
 protected:
  const warren_host_api& api_ = host_abi::host_table();
  FakeWorkerServices worker_;
  FakeMessageServices message_;
};

TEST_F(HostApiTest, Table_DeclaresItsSizeAndAbiVersion) {
  EXPECT_EQ(api_.struct_size, sizeof(warren_host_api));
  EXPECT_EQ(api_.abi_major, static_cast<std::uint32_t>(WARREN_ABI_MAJOR));
  EXPECT_EQ(api_.abi_minor, static_cast<std::uint32_t>(WARREN_ABI_MINOR));
}

TEST_F(HostApiTest, PluginLog_ReachesTheWorkerWithItsLevel) {
  api_.plugin_log(host_plugin(worker_), WARREN_LOG_INFO, abi("started"));
  api_.plugin_log(host_plugin(worker_), WARREN_LOG_WARN, abi("slow"));
  api_.plugin_log(host_plugin(worker_), WARREN_LOG_ERROR, abi("broken"));

  EXPECT_THAT(worker_.logs,
              ElementsAre(log_line(LogLevel::info, "started"), log_line(LogLevel::warn, "slow"),
                          log_line(LogLevel::error, "broken")));
}

TEST_F(HostApiTest, DebugAndTraceLines_ReachTheWorkerAndTheMessageWithTheirLevels) {
  api_.plugin_log(host_plugin(worker_), WARREN_LOG_DEBUG, abi("cache warm"));
  api_.message_log(host_message(message_), WARREN_LOG_TRACE, abi("parsed"));

  EXPECT_THAT(worker_.logs, ElementsAre(log_line(LogLevel::debug, "cache warm")));
  EXPECT_THAT(message_.logs, ElementsAre(log_line(LogLevel::trace, "parsed")));
}

TEST_F(HostApiTest, LogEnabled_AnswersTheWorkersLevelAndNoToUnknownLevels) {
  worker_.least_level = LogLevel::info;

  EXPECT_EQ(api_.plugin_log_enabled(host_plugin(worker_), WARREN_LOG_TRACE), 0);
  EXPECT_EQ(api_.plugin_log_enabled(host_plugin(worker_), WARREN_LOG_DEBUG), 0);
  EXPECT_EQ(api_.plugin_log_enabled(host_plugin(worker_), WARREN_LOG_INFO), 1);
  EXPECT_EQ(api_.plugin_log_enabled(host_plugin(worker_), WARREN_LOG_ERROR), 1);
  EXPECT_EQ(api_.plugin_log_enabled(host_plugin(worker_), 99), 0);
  EXPECT_EQ(api_.plugin_log_enabled(nullptr, WARREN_LOG_ERROR), 0);
  worker_.least_level = LogLevel::debug;
  EXPECT_EQ(api_.plugin_log_enabled(host_plugin(worker_), WARREN_LOG_DEBUG), 1);
}

TEST_F(HostApiTest, UnknownLogLevel_IsLoggedAsAWarning) {
  api_.message_log(host_message(message_), 99, abi("odd level"));
  EXPECT_THAT(message_.logs, ElementsAre(log_line(LogLevel::warn, "odd level")));
}

TEST_F(HostApiTest, NullStringData_IsReadAsEmpty) {
  api_.plugin_log(host_plugin(worker_), WARREN_LOG_INFO, warren_str{nullptr, 0});
  api_.message_log(host_message(message_), WARREN_LOG_INFO, warren_str{nullptr, 12});

  EXPECT_THAT(worker_.logs, ElementsAre(log_line(LogLevel::info, "")));
  EXPECT_THAT(message_.logs, ElementsAre(log_line(LogLevel::info, "")));
}

TEST_F(HostApiTest, NullHandles_AreIgnored) {
  warren_str value{};
  api_.plugin_log(nullptr, WARREN_LOG_INFO, abi("lost"));
  EXPECT_EQ(api_.plugin_setting(nullptr, abi("key"), &value), 0);
  EXPECT_EQ(api_.plugin_worker_name(nullptr).size, 0u);
  EXPECT_EQ(api_.plugin_metric(nullptr, WARREN_METRIC_COUNTER, abi("x"), abi("y"), nullptr, 0),
            nullptr);
  api_.metric_record(nullptr, 1.0);
  api_.message_log(nullptr, WARREN_LOG_INFO, abi("lost"));
  EXPECT_EQ(api_.message_header(nullptr, abi("h"), &value), 0);
  EXPECT_EQ(api_.message_stop_requested(nullptr), 0);
  EXPECT_EQ(api_.message_scope(nullptr), nullptr);
  api_.message_set_scope(nullptr, nullptr, nullptr);
  api_.message_report(nullptr, nullptr);
  char error[64] = {};
  const warren_publish_request request = publish_request();
  EXPECT_NE(api_.message_publish(nullptr, &request, error, sizeof error), 0);
  EXPECT_THAT(error, HasSubstr("no message handle"));
}

TEST_F(HostApiTest, WorkerName_IsForwarded) {
  EXPECT_EQ(from_abi(api_.plugin_worker_name(host_plugin(worker_))), "orders-worker");
}

TEST_F(HostApiTest, ExistingSetting_ReturnsOneAndItsValue) {
  worker_.settings["dsn"] = "postgres://db/orders";
  warren_str value{};

  EXPECT_EQ(api_.plugin_setting(host_plugin(worker_), abi("dsn"), &value), 1);
  EXPECT_EQ(from_abi(value), "postgres://db/orders");
}

TEST_F(HostApiTest, MissingSetting_ReturnsZeroAndLeavesTheValueAlone) {
  warren_str value = abi("untouched");

  EXPECT_EQ(api_.plugin_setting(host_plugin(worker_), abi("dsn"), &value), 0);
  EXPECT_EQ(from_abi(value), "untouched");
}

TEST_F(HostApiTest, SettingWithoutAPlaceForTheValue_ReturnsZero) {
  worker_.settings["dsn"] = "postgres://db/orders";
  EXPECT_EQ(api_.plugin_setting(host_plugin(worker_), abi("dsn"), nullptr), 0);
}

TEST_F(HostApiTest, Header_ReturnsOneAndItsValueWhenPresent) {
  message_.headers["x-tenant"] = "acme";
  warren_str value{};

  EXPECT_EQ(api_.message_header(host_message(message_), abi("x-tenant"), &value), 1);
  EXPECT_EQ(from_abi(value), "acme");
  EXPECT_EQ(api_.message_header(host_message(message_), abi("x-other"), &value), 0);
}

TEST_F(HostApiTest, Metric_IsCreatedByTheWorkerAndRecordsThroughItsHandle) {
  const double buckets[] = {0.1, 0.5, 1.0};
  void* metric = api_.plugin_metric(host_plugin(worker_), WARREN_METRIC_HISTOGRAM,
                                    abi("latency_seconds"), abi("How long"), buckets, 3);
  ASSERT_NE(metric, nullptr);

  api_.metric_record(metric, 0.25);

  const testing::FakeMetric* created = worker_.find_metric("warren_plugin_latency_seconds");
  ASSERT_NE(created, nullptr) << "the worker receives the exported name";
  EXPECT_EQ(created->type(), MetricType::histogram);
  EXPECT_EQ(created->help, "How long");
  EXPECT_THAT(created->buckets, ElementsAre(0.1, 0.5, 1.0));
  EXPECT_THAT(created->recorded, ElementsAre(0.25));
}

TEST_F(HostApiTest, CounterHandle_DropsNegativeAndNaNIncrements) {
  void* metric = api_.plugin_metric(host_plugin(worker_), WARREN_METRIC_COUNTER, abi("jobs_total"),
                                    abi("Jobs"), nullptr, 0);
  ASSERT_NE(metric, nullptr);

  for (const double value : {2.0, -1.0, std::nan(""), 3.0})
    api_.metric_record(metric, value);

  EXPECT_THAT(worker_.find_metric("warren_plugin_jobs_total")->recorded, ElementsAre(2.0, 3.0));
}

TEST_F(HostApiTest, MetricOfUnknownType_IsRefusedAndTheRefusalLogged) {
  void* metric =
      api_.plugin_metric(host_plugin(worker_), 7, abi("odd_total"), abi("help"), nullptr, 0);

  EXPECT_EQ(metric, nullptr);
  EXPECT_THAT(worker_.metrics, SizeIs(0));
  EXPECT_THAT(worker_.logs, ElementsAre(log_line(LogLevel::warn,
                                                 "plugin metric 'warren_plugin_odd_total' "
                                                 "refused: unknown metric type 7")));
}

TEST_F(HostApiTest, MetricBreakingTheNameRules_NeverReachesTheWorker) {
  const double decreasing[] = {1.0, 0.5};

  EXPECT_EQ(api_.plugin_metric(host_plugin(worker_), WARREN_METRIC_COUNTER, abi("bad name"),
                               abi(""), nullptr, 0),
            nullptr);
  EXPECT_EQ(api_.plugin_metric(host_plugin(worker_), WARREN_METRIC_HISTOGRAM, abi("latency"),
                               abi(""), decreasing, 2),
            nullptr);

  EXPECT_THAT(worker_.metrics, SizeIs(0));
  EXPECT_THAT(
      worker_.logs,
      ElementsAre(log_line(LogLevel::warn,
                           "plugin metric 'warren_plugin_bad name' refused: invalid metric "
                           "name 'warren_plugin_bad name': use [a-zA-Z_:][a-zA-Z0-9_:]*"),
                  log_line(LogLevel::warn,
                           "plugin metric 'warren_plugin_latency' refused: histogram "
                           "'warren_plugin_latency': buckets must be strictly increasing")));
}

TEST_F(HostApiTest, MetricTheRegistryRefuses_IsNullWithTheRegistrysReasonLogged) {
  worker_.refuse_metrics_with = "metric 'warren_plugin_jobs_total' is already a gauge";

  EXPECT_EQ(api_.plugin_metric(host_plugin(worker_), WARREN_METRIC_COUNTER, abi("jobs_total"),
                               abi(""), nullptr, 0),
            nullptr);
  EXPECT_THAT(worker_.logs,
              ElementsAre(log_line(LogLevel::warn,
                                   "plugin metric 'warren_plugin_jobs_total' refused: "
                                   "metric 'warren_plugin_jobs_total' is already a "
                                   "gauge")));
}

void* labelled_metric(const warren_host_api& api, WorkerServices& worker, std::string_view name,
                      const std::vector<std::string_view>& label_names) {
  std::vector<warren_str> names;
  for (const std::string_view label : label_names)
    names.push_back(abi(label));
  return api.plugin_labelled_metric(host_plugin(worker), WARREN_METRIC_COUNTER, abi(name),
                                    abi("help"), nullptr, 0, names.data(), names.size());
}

void* series(const warren_host_api& api, void* metric,
             const std::vector<std::string_view>& label_values) {
  std::vector<warren_str> values;
  for (const std::string_view value : label_values)
    values.push_back(abi(value));
  return api.metric_series(metric, values.data(), values.size());
}

TEST_F(HostApiTest, LabelledMetric_RecordsIntoTheSeriesOfTheValuesGiven) {
  void* metric = labelled_metric(api_, worker_, "emails_total", {"locale", "tier"});
  ASSERT_NE(metric, nullptr);

  api_.metric_record(series(api_, metric, {"pt-BR", "gold"}), 1);
  api_.metric_record(series(api_, metric, {"pt-BR", "gold"}), 2);
  api_.metric_record(series(api_, metric, {"en", "free"}), 5);
  api_.metric_record(metric, 7);  // the metric itself is no series: nothing recorded

  ASSERT_THAT(worker_.labelled_metrics, SizeIs(1));
  const testing::FakeLabelledMetric& created = *worker_.labelled_metrics[0];
  EXPECT_EQ(created.name, "warren_plugin_emails_total");
  EXPECT_THAT(created.label_names(), ElementsAre("locale", "tier"));
  EXPECT_THAT(created.find_series("pt-BR,gold")->recorded, ElementsAre(1.0, 2.0));
  EXPECT_THAT(created.find_series("en,free")->recorded, ElementsAre(5.0));
  EXPECT_THAT(created.made_series, SizeIs(2));
}

TEST_F(HostApiTest, LabelledMetricPastItsBound_RecordsIntoTheOverflowSeriesAndWarnsOnce) {
  void* metric = labelled_metric(api_, worker_, "emails_total", {"locale"});
  ASSERT_NE(metric, nullptr);

  for (const char* locale : {"a", "b", "c", "d", "e", "a"})
    api_.metric_record(series(api_, metric, {locale}), 1);

  const testing::FakeLabelledMetric& created = *worker_.labelled_metrics[0];
  EXPECT_THAT(created.find_series("__overflow__")->recorded, ElementsAre(1.0, 1.0))
      << "d and e, past the bound of 3";
  EXPECT_THAT(created.find_series("a")->recorded, ElementsAre(1.0, 1.0));
  EXPECT_THAT(
      worker_.logs,
      ElementsAre(AllOf(Field(&LogLine::level, LogLevel::warn),
                        Field(&LogLine::text, HasSubstr("reached its limit of 3 series")))));
}

TEST_F(HostApiTest, SeriesOfAWrongCountOrOfAnUnlabelledMetric_IsNull) {
  void* labelled = labelled_metric(api_, worker_, "emails_total", {"locale"});
  void* plain = api_.plugin_metric(host_plugin(worker_), WARREN_METRIC_COUNTER, abi("jobs_total"),
                                   abi(""), nullptr, 0);

  EXPECT_EQ(series(api_, labelled, {}), nullptr);
  EXPECT_EQ(series(api_, labelled, {"pt-BR", "gold"}), nullptr);
  EXPECT_EQ(series(api_, plain, {}), nullptr);
  EXPECT_EQ(series(api_, nullptr, {"pt-BR"}), nullptr);
  EXPECT_EQ(api_.metric_series(labelled, nullptr, 1), nullptr);
}

TEST_F(HostApiTest, LabelledMetricWithTheHostsLabelNames_IsRefusedAndTheRefusalLogged) {
  EXPECT_EQ(labelled_metric(api_, worker_, "emails_total", {"worker"}), nullptr);
  EXPECT_EQ(
      labelled_metric(api_, worker_, "emails_total", {"a", "b", "c", "d", "e", "f", "g", "h", "i"}),
      nullptr);

  EXPECT_THAT(worker_.labelled_metrics, SizeIs(0));
  EXPECT_THAT(worker_.logs,
              ElementsAre(log_line(LogLevel::warn,
                                   "plugin metric 'warren_plugin_emails_total' refused: label "
                                   "name 'worker' is reserved (the host's or Prometheus' own)"),
                          log_line(LogLevel::warn,
                                   "plugin metric 'warren_plugin_emails_total' refused: 9 label "
                                   "names, more than the 8 a metric may have")));
}

TEST_F(HostApiTest, StopRequested_IsForwarded) {
  EXPECT_EQ(api_.message_stop_requested(host_message(message_)), 0);
  message_.stop = true;
  EXPECT_EQ(api_.message_stop_requested(host_message(message_)), 1);
}

TEST_F(HostApiTest, ScopeSetThroughSetScope_IsWhatScopeReturns) {
  destroyed_scopes.clear();
  auto* scope = new std::string("per-message");

  EXPECT_EQ(api_.message_scope(host_message(message_)), nullptr);
  api_.message_set_scope(host_message(message_), scope, &destroy_named_scope);

  EXPECT_EQ(api_.message_scope(host_message(message_)), scope);
  EXPECT_THAT(destroyed_scopes, SizeIs(0)) << "nothing dies before the message settles";
}

TEST_F(HostApiTest, ReplacedScope_IsDestroyedAtOnceAndTheNewOneAtSettlement) {
  destroyed_scopes.clear();
  api_.message_set_scope(host_message(message_), new std::string("first"), &destroy_named_scope);
  void* second = new std::string("second");

  api_.message_set_scope(host_message(message_), second, &destroy_named_scope);
  api_.message_set_scope(host_message(message_), second, &destroy_named_scope);

  EXPECT_THAT(destroyed_scopes, ElementsAre("first")) << "setting the same scope again keeps it";
  EXPECT_EQ(api_.message_scope(host_message(message_)), second);
  message_.scope_slot.settle();
  EXPECT_THAT(destroyed_scopes, ElementsAre("first", "second"));
  EXPECT_EQ(api_.message_scope(host_message(message_)), nullptr);
}

TEST_F(HostApiTest, ScopeOfAMessageNeverSettledExplicitly_DiesWithTheMessage) {
  destroyed_scopes.clear();
  {
    FakeMessageServices short_lived;
    api_.message_set_scope(host_message(short_lived), new std::string("orphan"),
                           &destroy_named_scope);
  }
  EXPECT_THAT(destroyed_scopes, ElementsAre("orphan"));
}

TEST_F(HostApiTest, SuccessfulPublish_ReturnsZeroAndForwardsTheRequest) {
  const warren_str names[] = {abi("x-tenant")};
  const warren_str values[] = {abi("acme")};
  warren_publish_request request = publish_request();
  request.header_names = names;
  request.header_values = values;
  request.header_count = 1;
  char error[64] = "untouched";

  EXPECT_EQ(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);

  OutgoingMessage expected;
  expected.exchange = "orders";
  expected.routing_key = "order.created";
  expected.body = "{}";
  expected.headers = {{"x-tenant", "acme"}};
  EXPECT_THAT(message_.published, ElementsAre(expected));
  EXPECT_STREQ(error, "untouched");
}

TEST_F(HostApiTest, Publish_ReadsNullStringDataAsEmpty) {
  const warren_str names[] = {warren_str{nullptr, 5}};
  const warren_str values[] = {abi("v")};
  warren_publish_request request = publish_request();
  request.content_type = warren_str{nullptr, 0};
  request.message_id = warren_str{nullptr, 7};
  request.header_names = names;
  request.header_values = values;
  request.header_count = 1;
  char error[64] = {};

  EXPECT_EQ(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);
  ASSERT_THAT(message_.published, SizeIs(1));
  EXPECT_EQ(message_.published[0].content_type, "");
  EXPECT_EQ(message_.published[0].message_id, "");
  EXPECT_THAT(message_.published[0].headers,
              ElementsAre(std::pair<std::string, std::string>("", "v")));
}

TEST_F(HostApiTest, FailedPublish_CopiesTheReasonNulTerminated) {
  message_.publish_failure = "no queue bound to orders/order.created";
  const warren_publish_request request = publish_request();
  char error[128];
  std::memset(error, 'z', sizeof error);

  EXPECT_NE(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);
  EXPECT_STREQ(error, "no queue bound to orders/order.created");
}

TEST_F(HostApiTest, FailedPublish_TruncatesTheReasonToTheBuffer) {
  message_.publish_failure = "no queue bound to orders/order.created";
  const warren_publish_request request = publish_request();
  char error[9];
  std::memset(error, 'z', sizeof error);

  EXPECT_NE(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);
  EXPECT_STREQ(error, "no queue");
}

TEST_F(HostApiTest, FailedPublishWithoutABuffer_StillFails) {
  message_.publish_failure = "nacked";
  const warren_publish_request request = publish_request();
  char untouched = 'u';

  EXPECT_NE(api_.message_publish(host_message(message_), &request, &untouched, 0), 0);
  EXPECT_NE(api_.message_publish(host_message(message_), &request, nullptr, 64), 0);
  EXPECT_EQ(untouched, 'u');
}

TEST_F(HostApiTest, PublishNotMandatory_IsForwardedAsNotMandatory) {
  warren_publish_request request = publish_request();
  request.flags = WARREN_PUBLISH_NOT_MANDATORY;
  char error[64] = {};

  EXPECT_EQ(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);
  request.flags = 0;
  EXPECT_EQ(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);

  ASSERT_THAT(message_.published, SizeIs(2));
  EXPECT_FALSE(message_.published[0].mandatory);
  EXPECT_TRUE(message_.published[1].mandatory);
}

TEST_F(HostApiTest, PublishRequestOfAbi1_1_IsMandatoryWhateverFollowsIt) {
  warren_publish_request request = publish_request();
  request.struct_size = detail::kPublishRequestV1_1Size;
  request.flags = WARREN_PUBLISH_NOT_MANDATORY;  // past the plugin's struct: not its field
  char error[64] = {};

  EXPECT_EQ(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);

  ASSERT_THAT(message_.published, SizeIs(1));
  EXPECT_TRUE(message_.published[0].mandatory);
}

TEST_F(HostApiTest, PublishWithoutARequest_IsRefusedWithAReason) {
  char error[128] = {};
  EXPECT_NE(api_.message_publish(host_message(message_), nullptr, error, sizeof error), 0);
  EXPECT_THAT(error, HasSubstr("no publish request"));
  EXPECT_THAT(message_.published, SizeIs(0));
}

TEST_F(HostApiTest, PublishWithHeaderCountButNoHeaders_IsRefused) {
  warren_publish_request request = publish_request();
  request.header_count = 2;
  char error[128] = {};

  EXPECT_NE(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);
  EXPECT_THAT(error, HasSubstr("header arrays are missing"));
  EXPECT_THAT(message_.published, SizeIs(0));
}

TEST_F(HostApiTest, PublishRequestSmallerThanAbi1_0_IsRefused) {
  warren_publish_request request = publish_request();
  request.struct_size = 8;
  char error[128] = {};

  EXPECT_NE(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);
  EXPECT_THAT(error, HasSubstr("smaller than Warren ABI 1.0"));
  EXPECT_THAT(message_.published, SizeIs(0));
}

TEST_F(HostApiTest, Report_ForwardsTheOutcomeRead) {
  warren_outcome outcome{};
  outcome.struct_size = sizeof outcome;
  outcome.kind = WARREN_OUTCOME_DEAD_LETTER;
  outcome.delay_ms = -1;
  outcome.reason = abi("unknown customer");
  outcome.error_kind = WARREN_ERROR_NONE;

  api_.message_report(host_message(message_), &outcome);

  ASSERT_THAT(message_.reports, SizeIs(1));
  EXPECT_EQ(message_.reports[0].kind, ReportedOutcome::Kind::dead_letter);
  EXPECT_EQ(message_.reports[0].reason, "unknown customer");
  EXPECT_FALSE(message_.reports[0].threw());
}

TEST_F(HostApiTest, NullOrTruncatedOutcome_IsReportedAsInvalidWithAReason) {
  warren_outcome truncated{};
  truncated.struct_size = 8;
  truncated.kind = WARREN_OUTCOME_ACK;

  api_.message_report(host_message(message_), nullptr);
  api_.message_report(host_message(message_), &truncated);

  ASSERT_THAT(message_.reports, SizeIs(2));
  EXPECT_EQ(message_.reports[0].kind, ReportedOutcome::Kind::invalid);
  EXPECT_THAT(message_.reports[0].reason, HasSubstr("no outcome"));
  EXPECT_EQ(message_.reports[1].kind, ReportedOutcome::Kind::invalid);
  EXPECT_THAT(message_.reports[1].reason, HasSubstr("smaller than Warren ABI 1.0"));
}

}  // namespace
}  // namespace warren::plugin
