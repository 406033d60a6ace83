// See labelled_metric.h.
#include "warren/host_abi/labelled_metric.h"

#include <utility>

#include "warren/host_abi/metric_rules.h"

namespace warren::host_abi {
namespace {

// One string per tuple of values, unambiguous whatever the values hold: each is length-prefixed.
std::string series_key(std::span<const std::string_view> values) {
  std::string key;
  for (const std::string_view value : values) {
    key += std::to_string(value.size());
    key += ':';
    key += value;
  }
  return key;
}

}  // namespace

LabelledMetric::LabelledMetric(MetricType type, std::string exported_name,
                               std::vector<std::string> label_names, std::size_t series_limit,
                               std::function<void(const std::string&)> warn)
    : PluginMetric(type),
      exported_name_(std::move(exported_name)),
      label_names_(std::move(label_names)),
      series_limit_(series_limit),
      warn_(std::move(warn)) {}

PluginMetric* LabelledMetric::series(std::span<const std::string_view> values) noexcept {
  if (values.size() != label_names_.size())
    return nullptr;
  try {
    const std::string key = series_key(values);
    const std::lock_guard lock(mutex_);
    if (const auto found = series_.find(key); found != series_.end())
      return found->second.get();
    if (series_.size() < series_limit_) {
      std::vector<std::string> checked;
      checked.reserve(values.size());
      for (const std::string_view value : values)
        checked.push_back(valid_label_value(value));
      std::unique_ptr<PluginMetric> made = make_series(checked);
      return series_.emplace(key, std::move(made)).first->second.get();
    }
    if (overflow_ == nullptr)
      overflow_ =
          make_series(std::vector<std::string>(values.size(), std::string(kOverflowLabelValue)));
    if (!warned_) {
      warned_ = true;
      warn_("plugin metric '" + exported_name_ + "' reached its limit of " +
            std::to_string(series_limit_) +
            " series; updates with new label values go to the "
            "series whose labels are all \"" +
            std::string(kOverflowLabelValue) +
            "\" (warned once; label values should come from a small set)");
    }
    return overflow_.get();
  } catch (...) {  // out of memory, or the registry refused the series: the update is lost
    return nullptr;
  }
}

}  // namespace warren::host_abi
