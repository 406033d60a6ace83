// The warren_host_api table, called directly as a plugin would (including a careless one): it
// forwards to the runtime's services and is defensive about whatever a plugin passes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>

#include "fake_services.h"
#include "plugin/host_services.h"

namespace warren::plugin {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::FakeMessageServices;
using testing::FakeWorkerServices;
using ::testing::Field;
using ::testing::HasSubstr;
using testing::LogLine;
using ::testing::SizeIs;

warren_str abi(std::string_view text) {
  return warren_str{text.data(), text.size()};
}
std::string_view text(warren_str value) {
  return std::string_view(value.data, value.size);
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
  const warren_host_api& api_ = host_api();
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
  EXPECT_EQ(text(api_.plugin_worker_name(host_plugin(worker_))), "orders-worker");
}

TEST_F(HostApiTest, ExistingSetting_ReturnsOneAndItsValue) {
  worker_.settings["dsn"] = "postgres://db/orders";
  warren_str value{};

  EXPECT_EQ(api_.plugin_setting(host_plugin(worker_), abi("dsn"), &value), 1);
  EXPECT_EQ(text(value), "postgres://db/orders");
}

TEST_F(HostApiTest, MissingSetting_ReturnsZeroAndLeavesTheValueAlone) {
  warren_str value = abi("untouched");

  EXPECT_EQ(api_.plugin_setting(host_plugin(worker_), abi("dsn"), &value), 0);
  EXPECT_EQ(text(value), "untouched");
}

TEST_F(HostApiTest, SettingWithoutAPlaceForTheValue_ReturnsZero) {
  worker_.settings["dsn"] = "postgres://db/orders";
  EXPECT_EQ(api_.plugin_setting(host_plugin(worker_), abi("dsn"), nullptr), 0);
}

TEST_F(HostApiTest, Header_ReturnsOneAndItsValueWhenPresent) {
  message_.headers["x-tenant"] = "acme";
  warren_str value{};

  EXPECT_EQ(api_.message_header(host_message(message_), abi("x-tenant"), &value), 1);
  EXPECT_EQ(text(value), "acme");
  EXPECT_EQ(api_.message_header(host_message(message_), abi("x-other"), &value), 0);
}

TEST_F(HostApiTest, Metric_IsCreatedByTheWorkerAndRecordsThroughItsHandle) {
  const double buckets[] = {0.1, 0.5, 1.0};
  void* metric = api_.plugin_metric(host_plugin(worker_), WARREN_METRIC_HISTOGRAM,
                                    abi("latency_seconds"), abi("How long"), buckets, 3);
  ASSERT_NE(metric, nullptr);

  api_.metric_record(metric, 0.25);

  const testing::FakeMetric* created = worker_.find_metric("latency_seconds");
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->type, WARREN_METRIC_HISTOGRAM);
  EXPECT_THAT(created->buckets, ElementsAre(0.1, 0.5, 1.0));
  EXPECT_THAT(created->recorded, ElementsAre(0.25));
}

TEST_F(HostApiTest, MetricOfUnknownType_IsRefusedAndTheRefusalLogged) {
  void* metric =
      api_.plugin_metric(host_plugin(worker_), 7, abi("odd_total"), abi("help"), nullptr, 0);

  EXPECT_EQ(metric, nullptr);
  EXPECT_THAT(worker_.metrics, SizeIs(0));
  ASSERT_THAT(worker_.logs, SizeIs(1));
  EXPECT_THAT(worker_.logs[0].text,
              AllOf(HasSubstr("\"odd_total\""), HasSubstr("unknown metric type 7")));
}

TEST_F(HostApiTest, StopRequested_IsForwarded) {
  EXPECT_EQ(api_.message_stop_requested(host_message(message_)), 0);
  message_.stop = true;
  EXPECT_EQ(api_.message_stop_requested(host_message(message_)), 1);
}

int destroyed_scopes = 0;
void count_destroyed_scope(void* scope) {
  ++destroyed_scopes;
  delete static_cast<std::string*>(scope);
}

TEST_F(HostApiTest, ScopeSetThroughSetScope_IsWhatScopeReturnsUntilTheHostDestroysIt) {
  destroyed_scopes = 0;
  auto* scope = new std::string("per-message");

  EXPECT_EQ(api_.message_scope(host_message(message_)), nullptr);
  api_.message_set_scope(host_message(message_), scope, &count_destroyed_scope);

  EXPECT_EQ(api_.message_scope(host_message(message_)), scope);
  EXPECT_EQ(message_.scope_destroy, &count_destroyed_scope);
  message_.settle();
  EXPECT_EQ(destroyed_scopes, 1);
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

  ASSERT_THAT(message_.published, SizeIs(1));
  EXPECT_EQ(message_.published[0].exchange, "orders");
  EXPECT_EQ(message_.published[0].routing_key, "order.created");
  EXPECT_EQ(message_.published[0].body, "{}");
  EXPECT_THAT(message_.published[0].headers,
              ElementsAre(std::pair<std::string, std::string>("x-tenant", "acme")));
  EXPECT_STREQ(error, "untouched");
}

TEST_F(HostApiTest, Publish_GivesTheRuntimeNoNullStringData) {
  warren_publish_request request = publish_request();
  request.content_type = warren_str{nullptr, 0};
  request.message_id = warren_str{nullptr, 0};
  char error[64] = {};

  EXPECT_EQ(api_.message_publish(host_message(message_), &request, error, sizeof error), 0);
  EXPECT_FALSE(message_.saw_null_string_data);
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

TEST_F(HostApiTest, Report_ForwardsTheOutcome) {
  warren_outcome outcome{};
  outcome.struct_size = sizeof outcome;
  outcome.kind = WARREN_OUTCOME_DEAD_LETTER;
  outcome.delay_ms = -1;
  outcome.reason = abi("unknown customer");
  outcome.error_kind = WARREN_ERROR_NONE;

  api_.message_report(host_message(message_), &outcome);

  ASSERT_THAT(message_.reports, SizeIs(1));
  EXPECT_EQ(message_.reports[0].kind, static_cast<std::uint32_t>(WARREN_OUTCOME_DEAD_LETTER));
  EXPECT_EQ(message_.reports[0].reason, "unknown customer");
}

TEST_F(HostApiTest, NullOrTruncatedOutcome_IsReportedAsKindZeroWithAReason) {
  warren_outcome truncated{};
  truncated.struct_size = 8;
  truncated.kind = WARREN_OUTCOME_ACK;

  api_.message_report(host_message(message_), nullptr);
  api_.message_report(host_message(message_), &truncated);

  ASSERT_THAT(message_.reports, SizeIs(2));
  EXPECT_EQ(message_.reports[0].kind, 0u);
  EXPECT_THAT(message_.reports[0].reason, HasSubstr("no outcome"));
  EXPECT_EQ(message_.reports[1].kind, 0u);
  EXPECT_THAT(message_.reports[1].reason, HasSubstr("smaller than Warren ABI 1.0"));
}

}  // namespace
}  // namespace warren::plugin
