// One table of calls a plugin can make through the host table, valid and invalid, played once in
// the host and once in the test harness (abi_sides.h): each must give the answer the table
// expects, so a plugin that passes its harness tests behaves the same in the host. Before the
// shared adapter, the harness refused ':' in metric names, accepted a histogram without buckets
// and published a request smaller than ABI 1.0's; the rows marked "drift" pin those down.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "abi_sides.h"
#include "named_scopes.h"
#include "warren/detail/strings.h"

namespace warren::plugin::testing {
namespace {

using detail::to_abi;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

struct Call {
  Call(const char* call_name, RawScript call_script, std::string plugin_sees,
       std::string message_settles = "ack", std::string reason_part = "",
       std::vector<std::string> publishes = {})
      : name(call_name),
        script(std::move(call_script)),
        seen(std::move(plugin_sees)),
        settled(std::move(message_settles)),
        reason(std::move(reason_part)),
        published(std::move(publishes)) {}

  const char* name;
  RawScript script;
  std::string seen;     // what the plugin must see
  std::string settled;  // what must become of the message
  std::string reason;   // a part of the reason both sides must keep ("": not checked)
  std::vector<std::string> published;
};

std::string handle_or_null(const void* metric) {
  return metric != nullptr ? "handle" : "null";
}

// A script that makes one metric call, then acks.
RawScript metric_call(std::uint32_t type, std::string name, std::vector<double> buckets = {}) {
  return [=](RawCalls& calls) {
    const std::string seen = handle_or_null(calls.metric(type, name, buckets));
    calls.ack();
    return seen;
  };
}

warren_publish_request order_created() {
  warren_publish_request request{};
  request.struct_size = sizeof request;
  request.exchange = to_abi("orders");
  request.routing_key = to_abi("order.created");
  request.body = to_abi("{\"id\":7}");
  return request;
}

// A script that publishes what `make` builds (nullptr: no request at all), then acks.
RawScript publish_call(std::function<warren_publish_request()> make, bool null_request = false) {
  return [=](RawCalls& calls) {
    const warren_publish_request request = make();
    const std::string seen = calls.publish(null_request ? nullptr : &request);
    calls.ack();
    return seen;
  };
}

// A script that reports `outcome` as it is, seeing nothing.
RawScript report_call(std::function<void(RawCalls&)> report) {
  return [=](RawCalls& calls) {
    report(calls);
    return std::string();
  };
}

constexpr std::uint32_t kCounter = WARREN_METRIC_COUNTER;
constexpr std::uint32_t kHistogram = WARREN_METRIC_HISTOGRAM;

std::vector<Call> calls() {
  std::vector<Call> table;
  auto add = [&](Call call) { table.push_back(std::move(call)); };

  // ---- metrics: the names, types and buckets of host_abi/metric_rules.h
  add({"counter", metric_call(kCounter, "emails_sent_total"), "handle"});
  add({"colon_in_name (drift)", metric_call(kCounter, "orders:processed_total"), "handle"});
  add({"digit_after_prefix", metric_call(kCounter, "9lives_total"), "handle"});
  add({"already_prefixed", metric_call(kCounter, "warren_plugin_jobs_total"), "handle"});
  add({"invalid_character", metric_call(kCounter, "bad name!"), "null"});
  add({"empty_name", metric_call(kCounter, ""), "null"});
  add({"prefix_only", metric_call(kCounter, "warren_plugin_"), "null"});
  add({"histogram", metric_call(kHistogram, "latency_seconds", {0.1, 1}), "handle"});
  add({"histogram_without_buckets (drift)", metric_call(kHistogram, "latency_seconds"), "null"});
  add({"histogram_repeated_bucket", metric_call(kHistogram, "latency_seconds", {0.1, 0.1}),
       "null"});
  add({"histogram_decreasing_buckets", metric_call(kHistogram, "latency_seconds", {1, 0.5}),
       "null"});
  add({"unknown_type", metric_call(7, "odd_total"), "null"});
  add({"same_name_other_type",
       [](RawCalls& calls) {
         const std::string first = handle_or_null(calls.metric(kCounter, "jobs_total"));
         const std::string second = handle_or_null(calls.metric(WARREN_METRIC_GAUGE, "jobs_total"));
         calls.ack();
         return first + ", " + second;
       },
       "handle, null"});
  add({"same_name_same_type",
       [](RawCalls& calls) {
         void* first = calls.metric(kCounter, "jobs_total");
         void* second = calls.metric(kCounter, "jobs_total");
         calls.ack();
         return first != nullptr && first == second ? "same handle" : "different handles";
       },
       "same handle"});

  // ---- publishing: the checks of the request, then the broker's answer
  add({"publish",
       publish_call([] {
         static const warren_str names[] = {to_abi("x-tenant")};
         static const warren_str values[] = {to_abi("acme")};
         warren_publish_request request = order_created();
         request.content_type = to_abi("application/json");
         request.message_id = to_abi("out-1");
         request.header_names = names;
         request.header_values = values;
         request.header_count = 1;
         return request;
       }),
       "0",
       "ack",
       "",
       {"orders|order.created|{\"id\":7}|application/json|out-1|x-tenant=acme;"}});
  add({"publish_null_strings",
       publish_call([] {
         warren_publish_request request = order_created();
         request.body = warren_str{nullptr, 9};
         request.message_id = warren_str{nullptr, 0};
         return request;
       }),
       "0",
       "ack",
       "",
       {"orders|order.created||||"}});
  add({"publish_without_request", publish_call(order_created, true),
       "1: publish refused: the plugin passed no publish request"});
  add({"publish_smaller_than_1_0 (drift)", publish_call([] {
         warren_publish_request request = order_created();
         request.struct_size = 8;
         return request;
       }),
       "1: publish refused: the publish request is smaller than Warren ABI 1.0's"});
  add({"publish_headers_missing", publish_call([] {
         warren_publish_request request = order_created();
         request.header_count = 2;
         return request;
       }),
       "1: publish refused: header_count is set but the header arrays are missing"});

  // ---- lookups
  add({"settings",
       [](RawCalls& calls) {
         warren_str value{};
         const int found = calls.host.plugin_setting(calls.worker, to_abi("greeting"), &value);
         std::string seen = std::to_string(found) + " " + std::string(detail::from_abi(value));
         seen +=
             ", " + std::to_string(calls.host.plugin_setting(calls.worker, to_abi("nope"), &value));
         calls.ack();
         return seen;
       },
       "1 hello, 0"});
  add({"headers_worker_name_and_stop",
       [](RawCalls& calls) {
         warren_str value{};
         const int found = calls.host.message_header(calls.message, to_abi("x-tenant"), &value);
         std::string seen = std::to_string(found) + " " + std::string(detail::from_abi(value));
         seen += ", " + std::to_string(
                            calls.host.message_header(calls.message, to_abi("x-missing"), &value));
         seen += ", " + std::string(detail::from_abi(calls.host.plugin_worker_name(calls.worker)));
         seen += ", stop " + std::to_string(calls.host.message_stop_requested(calls.message));
         calls.ack();
         return seen;
       },
       "1 acme, 0, w, stop 0"});

  // ---- reports: every encoding of every outcome, of ABI 1.0 and 1.1
  add({"ack", report_call([](RawCalls& c) { c.ack(); }), "", "ack"});
  add({"retry_by_policy", report_call([](RawCalls& c) { c.report(WARREN_OUTCOME_RETRY); }), "",
       "retry"});
  add({"retry_with_delay", report_call([](RawCalls& c) { c.report(WARREN_OUTCOME_RETRY, 250); }),
       "", "retry after 250 ms"});
  add({"retry_with_negative_delay",
       report_call([](RawCalls& c) { c.report(WARREN_OUTCOME_RETRY, -5); }), "", "invalid",
       "the handler asked for a negative retry delay"});
  add({"dead_letter",
       report_call([](RawCalls& c) { c.report(WARREN_OUTCOME_DEAD_LETTER, -1, "unknown sku"); }),
       "", "dead_letter", "unknown sku"});
  add({"threw_std_exception", report_call([](RawCalls& c) {
         c.report(WARREN_OUTCOME_THREW, -1, "db down", WARREN_ERROR_STD_EXCEPTION,
                  "St13runtime_error");
       }),
       "", "retry, threw std_exception", "db down"});
  add({"threw_non_std", report_call([](RawCalls& c) {
         c.report(WARREN_OUTCOME_THREW, -1, "a non-std exception was thrown", WARREN_ERROR_UNKNOWN);
       }),
       "", "retry, threw unknown", "a non-std exception was thrown"});
  add({"permanent_error_as_abi_1_0_reports_it", report_call([](RawCalls& c) {
         c.report(WARREN_OUTCOME_THREW_PERMANENT, -1, "bad json", WARREN_ERROR_PERMANENT,
                  "N6warren14PermanentErrorE");
       }),
       "", "dead_letter, threw permanent", "bad json"});
  add({"permanent_error_as_abi_1_1_reports_it", report_call([](RawCalls& c) {
         c.report(WARREN_OUTCOME_DEAD_LETTER, -1, "bad json", WARREN_ERROR_PERMANENT,
                  "N6warren14PermanentErrorE");
       }),
       "", "dead_letter, threw permanent", "bad json"});
  add({"unknown_kind", report_call([](RawCalls& c) { c.report(99); }), "", "invalid",
       "invalid outcome (kind 99)"});
  add({"outcome_smaller_than_1_0", report_call([](RawCalls& c) {
         warren_outcome outcome{};
         outcome.struct_size = 8;
         outcome.kind = WARREN_OUTCOME_ACK;
         c.host.message_report(c.message, &outcome);
       }),
       "", "invalid", "smaller than Warren ABI 1.0"});
  add({"null_outcome", report_call([](RawCalls& c) { c.host.message_report(c.message, nullptr); }),
       "", "invalid", "no outcome"});
  add({"no_report", report_call([](RawCalls&) {}), "", "invalid", "outcome"});
  return table;
}

// gtest prints a failing parameter by its name.
void PrintTo(const Call& call, std::ostream* out) {
  *out << call.name;
}

class HostAbiConformance : public ::testing::TestWithParam<Call> {};

TEST_P(HostAbiConformance, HostAndHarnessGiveTheExpectedAnswer) {
  const Call& call = GetParam();
  HostSide host;
  HarnessSide harness;

  const Observation in_host = host.run(call.script);
  const Observation in_harness = harness.run(call.script);

  for (const auto& [side, observed] : {std::pair{"host", &in_host}, {"harness", &in_harness}}) {
    SCOPED_TRACE(side);
    EXPECT_EQ(observed->seen, call.seen);
    EXPECT_EQ(observed->settled, call.settled);
    EXPECT_THAT(observed->reason, HasSubstr(call.reason));
    EXPECT_THAT(observed->published, ElementsAreArray(call.published));
  }
}

INSTANTIATE_TEST_SUITE_P(Calls, HostAbiConformance, ::testing::ValuesIn(calls()),
                         [](const ::testing::TestParamInfo<Call>& param) {
                           std::string name = param.param.name;
                           name = name.substr(0, name.find(' '));
                           return name;
                         });

// A broker that refuses the publish: the plugin sees the broker's reason in both.
TEST(HostAbiConformanceBroker, RefusedPublish_ReachesThePluginWithTheBrokersReason) {
  HostSide host;
  HarnessSide harness;
  host.fail_next_publish("no queue bound to orders/order.created");
  harness.fail_next_publish("no queue bound to orders/order.created");
  const RawScript script = publish_call(order_created);

  for (const Observation& observed : {host.run(script), harness.run(script)}) {
    EXPECT_EQ(observed.seen, "1: no queue bound to orders/order.created");
    EXPECT_TRUE(observed.published.empty());
  }
}

// What a counter and a gauge end up holding, in /metrics and in harness.metrics().
TEST(HostAbiConformanceMetrics, RecordedValues_AreTheSameAndCountersNeverGoDown) {
  HostSide host;
  HarnessSide harness;
  const RawScript script = [](RawCalls& calls) {
    void* jobs = calls.metric(kCounter, "jobs_total");
    void* depth = calls.metric(WARREN_METRIC_GAUGE, "queue_depth");
    for (const double value : {2.0, -1.0, std::nan(""), 3.0})
      calls.host.metric_record(jobs, value);
    for (const double value : {4.0, -2.5})
      calls.host.metric_record(depth, value);
    calls.ack();
    return std::string();
  };
  host.run(script);
  harness.run(script);

  EXPECT_EQ(host.metric_value("warren_plugin_jobs_total"), 5.0);
  EXPECT_EQ(harness.metric_value("warren_plugin_jobs_total"), 5.0);
  EXPECT_EQ(host.metric_value("warren_plugin_queue_depth"), -2.5);
  EXPECT_EQ(harness.metric_value("warren_plugin_queue_depth"), -2.5);
}

// The scope rules of host_abi/message_scope.h: a replaced scope dies at once, the last one when
// the message settles; setting the same scope again keeps it.
TEST(HostAbiConformanceScope, ReplacedScopeDiesAtOnceAndTheLastAtSettlement) {
  const RawScript script = [](RawCalls& calls) {
    calls.host.message_set_scope(calls.message, new std::string("first"), &destroy_named_scope);
    void* second = new std::string("second");
    calls.host.message_set_scope(calls.message, second, &destroy_named_scope);
    calls.host.message_set_scope(calls.message, second, &destroy_named_scope);
    std::string seen;
    for (const std::string& name : destroyed_scopes)
      seen += name + " destroyed; ";
    seen += calls.host.message_scope(calls.message) == second ? "second is current" : "lost";
    calls.ack();
    return seen;
  };
  HostSide host;
  HarnessSide harness;

  destroyed_scopes.clear();
  EXPECT_EQ(host.run(script).seen, "first destroyed; second is current");
  EXPECT_THAT(destroyed_scopes, ElementsAre("first", "second")) << "in the host";

  destroyed_scopes.clear();
  EXPECT_EQ(harness.run(script).seen, "first destroyed; second is current");
  EXPECT_THAT(destroyed_scopes, ElementsAre("first", "second")) << "in the harness";
}

}  // namespace
}  // namespace warren::plugin::testing
