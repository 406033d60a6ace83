// Specification of labelled plugin metrics in the host's registry (SDK 1.2): the series carry the
// worker, the plugin and the plugin's labels; a metric keeps at most its bound of series, past
// which updates go to the "__overflow__" series and a warning is told once; label names that
// clash with the host's own, or with an earlier registration, are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "observability/metrics.h"

namespace warren::observability {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LabelledPluginMetricTest : public ::testing::Test {
 protected:
  host_abi::PluginMetric* create(MetricType type, const std::string& name,
                                 std::vector<std::string> label_names, std::size_t limit = 100,
                                 const std::string& worker = "orders",
                                 const std::vector<double>& buckets = {}) {
    error_.clear();
    Metrics::PluginLabels labels;
    labels.names = std::move(label_names);
    labels.series_limit = limit;
    labels.warn = [this](const std::string& text) { warnings_.push_back(text); };
    return metrics_.plugin_labelled_metric(worker, "livraria", type, name, "help text", buckets,
                                           labels, error_);
  }
  static host_abi::PluginMetric* series(host_abi::PluginMetric* metric,
                                        std::vector<std::string_view> values) {
    return metric->series(values);
  }
  bool exposes(const std::string& line) const {
    return metrics_.serialize().find(line) != std::string::npos;
  }

  Metrics metrics_;
  std::string error_;
  std::vector<std::string> warnings_;
};

TEST_F(LabelledPluginMetricTest, Series_CarryTheWorkerThePluginAndThePluginsLabels) {
  auto* emails = create(MetricType::counter, "emails_total", {"locale", "tier"});
  ASSERT_NE(emails, nullptr) << error_;

  series(emails, {"pt-BR", "gold"})->record(2);
  series(emails, {"pt-BR", "gold"})->record(1);
  series(emails, {"en", "free"})->record(1);

  EXPECT_TRUE(
      exposes("warren_plugin_emails_total{locale=\"pt-BR\",plugin=\"livraria\",tier="
              "\"gold\",worker=\"orders\"} 3"))
      << metrics_.serialize();
  EXPECT_TRUE(
      exposes("warren_plugin_emails_total{locale=\"en\",plugin=\"livraria\",tier="
              "\"free\",worker=\"orders\"} 1"));
}

TEST_F(LabelledPluginMetricTest, SameValues_AreTheSameSeriesHandle) {
  auto* emails = create(MetricType::counter, "emails_total", {"locale"});
  ASSERT_NE(emails, nullptr) << error_;

  EXPECT_EQ(series(emails, {"pt-BR"}), series(emails, {"pt-BR"}));
  EXPECT_NE(series(emails, {"pt-BR"}), series(emails, {"en"}));
}

TEST_F(LabelledPluginMetricTest, WrongNumberOfValues_IsNoSeries) {
  auto* emails = create(MetricType::counter, "emails_total", {"locale"});
  ASSERT_NE(emails, nullptr) << error_;

  EXPECT_EQ(series(emails, {}), nullptr);
  EXPECT_EQ(series(emails, {"pt-BR", "gold"}), nullptr);
}

TEST_F(LabelledPluginMetricTest, PastTheBound_UpdatesGoToTheOverflowSeriesAndOneWarningIsTold) {
  auto* emails = create(MetricType::counter, "emails_total", {"locale"}, 2);
  ASSERT_NE(emails, nullptr) << error_;

  series(emails, {"pt-BR"})->record(1);
  series(emails, {"en"})->record(1);
  series(emails, {"fr"})->record(1);
  series(emails, {"de"})->record(1);
  series(emails, {"pt-BR"})->record(1);

  EXPECT_TRUE(
      exposes("warren_plugin_emails_total{locale=\"__overflow__\",plugin=\"livraria\","
              "worker=\"orders\"} 2"))
      << metrics_.serialize();
  EXPECT_TRUE(exposes("{locale=\"pt-BR\",plugin=\"livraria\",worker=\"orders\"} 2"))
      << "series made before the bound keep counting";
  EXPECT_FALSE(exposes("locale=\"fr\""));
  ASSERT_THAT(warnings_, ElementsAre(HasSubstr("reached its limit of 2 series")));
  EXPECT_THAT(warnings_[0], HasSubstr("warren_plugin_emails_total"));
}

TEST_F(LabelledPluginMetricTest, HistogramSeries_UseTheDeclaredBuckets) {
  auto* latency =
      create(MetricType::histogram, "render_seconds", {"template"}, 100, "orders", {0.1, 1.0});
  ASSERT_NE(latency, nullptr) << error_;

  series(latency, {"receipt"})->record(0.5);

  EXPECT_TRUE(
      exposes("warren_plugin_render_seconds_bucket{plugin=\"livraria\",template="
              "\"receipt\",worker=\"orders\",le=\"1\"} 1"))
      << metrics_.serialize();
}

TEST_F(LabelledPluginMetricTest, LabelValueThatIsNotUtf8_IsExposedWithReplacementCharacters) {
  auto* emails = create(MetricType::counter, "emails_total", {"locale"});
  ASSERT_NE(emails, nullptr) << error_;

  series(emails, {"pt\xff"})->record(1);

  EXPECT_TRUE(exposes("locale=\"pt\xEF\xBF\xBD\"")) << metrics_.serialize();
}

TEST_F(LabelledPluginMetricTest, TheHostsOwnLabelNames_AreRefused) {
  for (const char* reserved : {"worker", "plugin", "le", "quantile", "__name__"}) {
    EXPECT_EQ(create(MetricType::counter, "emails_total", {reserved}), nullptr) << reserved;
    EXPECT_THAT(error_, HasSubstr(reserved));
  }
  EXPECT_EQ(create(MetricType::counter, "emails_total", {"bad-name"}), nullptr);
  EXPECT_THAT(error_, HasSubstr("invalid label name 'bad-name'"));
  EXPECT_EQ(create(MetricType::counter, "emails_total", {"locale", "locale"}), nullptr);
  EXPECT_THAT(error_, HasSubstr("declared twice"));
}

TEST_F(LabelledPluginMetricTest, SameNameWithOtherLabels_IsRefusedNamingBoth) {
  ASSERT_NE(create(MetricType::counter, "emails_total", {"locale"}), nullptr) << error_;

  EXPECT_EQ(create(MetricType::counter, "emails_total", {"tier"}, 100, "billing"), nullptr);
  EXPECT_THAT(error_, HasSubstr("already has the labels (locale), not (tier)"));
  EXPECT_EQ(metrics_.plugin_metric("billing", "livraria", MetricType::counter, "emails_total", "",
                                   {}, error_),
            nullptr)
      << "an unlabelled registration of a labelled name";
}

TEST_F(LabelledPluginMetricTest, SameNameAndLabelsInTheSameWorker_IsTheSameHandle) {
  auto* first = create(MetricType::counter, "emails_total", {"locale"});
  auto* again = create(MetricType::counter, "emails_total", {"locale"});

  ASSERT_NE(first, nullptr) << error_;
  EXPECT_EQ(first, again);
}

}  // namespace
}  // namespace warren::observability
