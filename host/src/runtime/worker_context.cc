// See worker_context.h.
#include "runtime/worker_context.h"

#include "observability/log.h"

namespace warren::runtime {

WorkerContext::WorkerContext(std::string worker, std::string plugin,
                             std::map<std::string, std::string> settings,
                             observability::Metrics& metrics, std::size_t metric_series_limit)
    : worker_(std::move(worker)),
      plugin_(std::move(plugin)),
      settings_(settings.begin(), settings.end()),
      metrics_(metrics),
      metric_series_limit_(metric_series_limit) {}

bool WorkerContext::log_enabled(LogLevel level) const noexcept {
  return observability::log_enabled(level);
}

void WorkerContext::log(LogLevel level, std::string_view text) noexcept {
  observability::log(level, observability::LogFields::for_worker(worker_), text);
}

const std::string* WorkerContext::setting(std::string_view key) const noexcept {
  const auto it = settings_.find(key);
  return it == settings_.end() ? nullptr : &it->second;
}

host_abi::PluginMetric* WorkerContext::metric(MetricType type, const std::string& exported_name,
                                              std::string_view help,
                                              std::span<const double> buckets,
                                              std::string& refusal) noexcept {
  try {
    return metrics_.plugin_metric(worker_, plugin_, type, exported_name, help, buckets, refusal);
  } catch (...) {
    refusal = "out of memory";
    return nullptr;
  }
}

host_abi::PluginMetric* WorkerContext::labelled_metric(MetricType type,
                                                       const std::string& exported_name,
                                                       std::string_view help,
                                                       std::span<const double> buckets,
                                                       std::span<const std::string> label_names,
                                                       std::string& refusal) noexcept {
  try {
    observability::Metrics::PluginLabels labels;
    labels.names.assign(label_names.begin(), label_names.end());
    labels.series_limit = metric_series_limit_;
    labels.warn = [this](const std::string& text) { log(LogLevel::warn, text); };
    return metrics_.plugin_labelled_metric(worker_, plugin_, type, exported_name, help, buckets,
                                           labels, refusal);
  } catch (...) {
    refusal = "out of memory";
    return nullptr;
  }
}

}  // namespace warren::runtime
