// Specification of the metrics plugins create through their context: names get the
// warren_plugin_ prefix, bad names and type clashes are refused with a reason, histogram buckets
// must increase.
#include <gtest/gtest.h>

#include <vector>

#include "observability/metrics.h"

namespace warren::observability {
namespace {

class PluginMetricTest : public ::testing::Test {
 protected:
  host_abi::PluginMetric* create(MetricType type, const std::string& name,
                                 const std::vector<double>& buckets = {},
                                 const std::string& worker = "orders") {
    error_.clear();
    return metrics_.plugin_metric(worker, "livraria", type, name, "help text", buckets, error_);
  }
  bool exposes(const std::string& line) const {
    return metrics_.serialize().find(line) != std::string::npos;
  }

  Metrics metrics_;
  std::string error_;
};

TEST_F(PluginMetricTest, NameWithoutPrefix_GetsWarrenPluginPrefixAndWorkerAndPluginLabels) {
  auto* metric = create(MetricType::counter, "emails_sent_total");
  ASSERT_NE(metric, nullptr) << error_;

  metric->record(2);

  EXPECT_TRUE(exposes("warren_plugin_emails_sent_total{plugin=\"livraria\",worker=\"orders\"} 2"))
      << metrics_.serialize();
}

TEST_F(PluginMetricTest, NameWithPrefix_IsNotPrefixedTwice) {
  auto* metric = create(MetricType::gauge, "warren_plugin_cache_size");
  ASSERT_NE(metric, nullptr) << error_;

  metric->record(17);

  EXPECT_TRUE(exposes("warren_plugin_cache_size{plugin=\"livraria\",worker=\"orders\"} 17"));
  EXPECT_FALSE(exposes("warren_plugin_warren_plugin_"));
}

TEST_F(PluginMetricTest, InvalidName_IsRefusedNamingIt) {
  EXPECT_EQ(create(MetricType::counter, "emails-sent"), nullptr);
  EXPECT_NE(error_.find("warren_plugin_emails-sent"), std::string::npos) << error_;

  EXPECT_EQ(create(MetricType::counter, "with space"), nullptr);
  EXPECT_FALSE(error_.empty());
}

TEST_F(PluginMetricTest, SameNameAsAnotherType_IsRefusedSayingWhichTypeItIs) {
  ASSERT_NE(create(MetricType::counter, "jobs_total"), nullptr) << error_;

  EXPECT_EQ(create(MetricType::gauge, "jobs_total"), nullptr);
  EXPECT_NE(error_.find("already a counter"), std::string::npos) << error_;
  EXPECT_EQ(create(MetricType::gauge, "jobs_total", {}, "emails"), nullptr)
      << "the type belongs to the name, whichever worker asks";
}

TEST_F(PluginMetricTest, SameNameAndTypeAgain_ReturnsTheSameHandle) {
  auto* first = create(MetricType::counter, "jobs_total");
  auto* second = create(MetricType::counter, "jobs_total");

  EXPECT_NE(first, nullptr);
  EXPECT_EQ(first, second);
}

TEST_F(PluginMetricTest, SameNameFromAnotherWorker_SharesTheFamilyWithItsOwnLabels) {
  create(MetricType::counter, "jobs_total")->record(1);
  create(MetricType::counter, "jobs_total", {}, "emails")->record(5);

  EXPECT_TRUE(exposes("warren_plugin_jobs_total{plugin=\"livraria\",worker=\"orders\"} 1"));
  EXPECT_TRUE(exposes("warren_plugin_jobs_total{plugin=\"livraria\",worker=\"emails\"} 5"));
}

TEST_F(PluginMetricTest, HistogramBuckets_MustStrictlyIncrease) {
  EXPECT_EQ(create(MetricType::histogram, "latency_seconds", {0.1, 0.1, 1}), nullptr);
  EXPECT_NE(error_.find("strictly increasing"), std::string::npos) << error_;
  EXPECT_EQ(create(MetricType::histogram, "latency_seconds", {1, 0.5}), nullptr);
  EXPECT_EQ(create(MetricType::histogram, "latency_seconds", {}), nullptr);
  EXPECT_NE(error_.find("at least one bucket"), std::string::npos) << error_;
}

TEST_F(PluginMetricTest, Histogram_ObservesIntoItsBuckets) {
  auto* metric = create(MetricType::histogram, "latency_seconds", {0.1, 1});
  ASSERT_NE(metric, nullptr) << error_;

  metric->record(0.5);

  EXPECT_TRUE(exposes(
      "warren_plugin_latency_seconds_bucket{plugin=\"livraria\",worker=\"orders\",le=\"1\"} 1"))
      << metrics_.serialize();
  EXPECT_TRUE(exposes(
      "warren_plugin_latency_seconds_bucket{plugin=\"livraria\",worker=\"orders\",le=\"0.1\"} 0"));
}

TEST_F(PluginMetricTest, CounterGivenANegativeValue_IgnoresIt) {
  auto* metric = create(MetricType::counter, "jobs_total");
  metric->record(4);
  metric->record(-1);

  EXPECT_TRUE(exposes("warren_plugin_jobs_total{plugin=\"livraria\",worker=\"orders\"} 4"));
}

}  // namespace
}  // namespace warren::observability
