// warren::host_abi::PluginMetric: a metric a plugin created through its PluginContext, as the
// host side holds it. abi.h's metric_record receives only this handle, so the handle itself
// records. The host's registry (observability/metrics.cc) and the test harness each implement
// `apply`; the rule every type of metric follows is here, once.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "warren/metrics.h"

namespace warren::host_abi {

class PluginMetric {
 public:
  explicit PluginMetric(MetricType type) noexcept : type_(type) {}
  virtual ~PluginMetric() = default;
  PluginMetric(const PluginMetric&) = delete;
  PluginMetric& operator=(const PluginMetric&) = delete;

  MetricType type() const noexcept { return type_; }

  // Counter: adds `value` (a negative or NaN increment is dropped: a counter only goes up);
  // histogram: observes it; gauge: sets it. Thread-safe.
  void record(double value) noexcept {
    if (type_ == MetricType::counter && !(value >= 0))
      return;
    apply(value);
  }

  // A labelled metric (labelled_metric.h) answers with its number of label names and the series
  // of some values; every other metric has no labels and no series.
  virtual std::size_t label_count() const noexcept { return 0; }
  // The series for `values` (label_count() of them), or nullptr. Thread-safe.
  virtual PluginMetric* series(std::span<const std::string_view> values) noexcept {
    (void)values;
    return nullptr;
  }

 private:
  virtual void apply(double value) noexcept = 0;

  MetricType type_;
};

}  // namespace warren::host_abi
