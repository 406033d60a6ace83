// host_abi/metric_rules.h: the exported name of a plugin metric and what is refused, with the
// words the host and the harness both log.
#include "warren/host_abi/metric_rules.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace warren::host_abi {
namespace {

std::optional<std::string> refusal(MetricType type, std::string_view name,
                                   const std::vector<double>& buckets = {}) {
  return metric_refusal(type, exported_metric_name(name), buckets);
}

TEST(MetricRules, ExportedName_GetsThePrefixOnce) {
  EXPECT_EQ(exported_metric_name("emails_total"), "warren_plugin_emails_total");
  EXPECT_EQ(exported_metric_name("warren_plugin_emails_total"), "warren_plugin_emails_total");
  EXPECT_EQ(exported_metric_name(""), "warren_plugin_");
}

TEST(MetricRules, PrometheusNames_AreAcceptedColonAndLeadingDigitIncluded) {
  for (const char* name : {"emails_total", "orders:processed_total", "9lives", "A_b:c_1"})
    EXPECT_EQ(refusal(MetricType::counter, name), std::nullopt) << name;
}

TEST(MetricRules, NameWithAnotherCharacter_IsRefusedNamingTheRule) {
  EXPECT_EQ(refusal(MetricType::counter, "emails-sent"),
            "invalid metric name 'warren_plugin_emails-sent': use [a-zA-Z_:][a-zA-Z0-9_:]*");
  for (const char* name : {"with space", "bad!", "é"})
    EXPECT_NE(refusal(MetricType::gauge, name), std::nullopt) << name;
}

TEST(MetricRules, NameThatIsOnlyThePrefix_IsRefused) {
  EXPECT_EQ(refusal(MetricType::counter, ""),
            "metric 'warren_plugin_' has no name after the warren_plugin_ prefix");
  EXPECT_NE(refusal(MetricType::counter, "warren_plugin_"), std::nullopt);
}

TEST(MetricRules, HistogramBuckets_AreAtLeastOneAndStrictlyIncreasing) {
  EXPECT_EQ(refusal(MetricType::histogram, "latency", {0.1}), std::nullopt);
  EXPECT_EQ(refusal(MetricType::histogram, "latency", {0.1, 0.5, 1}), std::nullopt);
  EXPECT_EQ(refusal(MetricType::histogram, "latency"),
            "histogram 'warren_plugin_latency' needs at least one bucket");
  EXPECT_EQ(refusal(MetricType::histogram, "latency", {0.1, 0.1}),
            "histogram 'warren_plugin_latency': buckets must be strictly increasing");
  EXPECT_NE(refusal(MetricType::histogram, "latency", {1, 0.5}), std::nullopt);
  EXPECT_EQ(refusal(MetricType::counter, "jobs_total", {1, 0.5}), std::nullopt)
      << "only histograms have buckets";
}

TEST(MetricRules, AbiTypes_MapOntoMetricTypeAndNothingElse) {
  EXPECT_EQ(metric_type_from_abi(WARREN_METRIC_COUNTER), MetricType::counter);
  EXPECT_EQ(metric_type_from_abi(WARREN_METRIC_HISTOGRAM), MetricType::histogram);
  EXPECT_EQ(metric_type_from_abi(WARREN_METRIC_GAUGE), MetricType::gauge);
  EXPECT_EQ(metric_type_from_abi(0), std::nullopt);
  EXPECT_EQ(metric_type_from_abi(4), std::nullopt);
}

TEST(MetricRules, TypeClash_SaysWhichTypeTheNameHas) {
  EXPECT_EQ(type_clash("warren_plugin_jobs_total", MetricType::counter, MetricType::gauge),
            "metric 'warren_plugin_jobs_total' is already a counter, not a gauge");
}

}  // namespace
}  // namespace warren::host_abi
