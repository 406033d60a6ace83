// warren::host_abi::LabelledMetric: a plugin metric with label names (abi.h's
// plugin_labelled_metric), holding its series, one per tuple of label values, up to a bound. The
// host's registry and the test harness each make the series (make_series); the bound, the
// overflow series and the warning said once are here, so both apply them the same way.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "warren/host_abi/plugin_metric.h"

namespace warren::host_abi {

// The value of every label of the series that takes the updates past the bound.
inline constexpr std::string_view kOverflowLabelValue = "__overflow__";
// Series per labelled metric and worker when the worker does not say (metric_series_limit).
inline constexpr std::size_t kDefaultMetricSeriesLimit = 100;

class LabelledMetric : public PluginMetric {
 public:
  // `warn` is called once, when a tuple of values first finds the metric full.
  LabelledMetric(MetricType type, std::string exported_name, std::vector<std::string> label_names,
                 std::size_t series_limit, std::function<void(const std::string&)> warn);

  const std::vector<std::string>& label_names() const noexcept { return label_names_; }
  std::size_t label_count() const noexcept override { return label_names_.size(); }

  // The series of `values`, made on first use; once series_limit series exist, every new tuple
  // shares the overflow series (made beyond the bound: the limit counts the others). nullptr
  // when the count is wrong or the series cannot be made. Label values that are not UTF-8 have
  // their invalid bytes replaced (metric_rules.h), as the exposition format needs.
  PluginMetric* series(std::span<const std::string_view> values) noexcept override;

 protected:
  // A new series with these (checked) values; called under the metric's lock.
  virtual std::unique_ptr<PluginMetric> make_series(const std::vector<std::string>& values) = 0;

 private:
  // Recording on the metric itself (not one of its series) records nothing.
  void apply(double) noexcept override {}

  const std::string exported_name_;
  const std::vector<std::string> label_names_;
  const std::size_t series_limit_;
  const std::function<void(const std::string&)> warn_;

  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<PluginMetric>> series_;  // by series_key
  std::unique_ptr<PluginMetric> overflow_;
  bool warned_ = false;
};

}  // namespace warren::host_abi
