// See worker_context.h.
#include "runtime/worker_context.h"

#include "observability/log.h"

namespace warren::runtime {

observability::LogLevel to_log_level(plugin::LogLevel level) noexcept {
  switch (level) {
    case plugin::LogLevel::info:
      return observability::LogLevel::info;
    case plugin::LogLevel::warn:
      return observability::LogLevel::warn;
    case plugin::LogLevel::error:
      return observability::LogLevel::error;
  }
  return observability::LogLevel::info;
}

WorkerContext::WorkerContext(std::string worker, std::string plugin,
                             std::map<std::string, std::string> settings,
                             observability::Metrics& metrics)
    : worker_(std::move(worker)),
      plugin_(std::move(plugin)),
      settings_(settings.begin(), settings.end()),
      metrics_(metrics) {}

void WorkerContext::log(plugin::LogLevel level, std::string_view text) noexcept {
  observability::log(to_log_level(level), observability::LogFields::for_worker(worker_), text);
}

const std::string* WorkerContext::setting(std::string_view key) const noexcept {
  const auto it = settings_.find(key);
  return it == settings_.end() ? nullptr : &it->second;
}

namespace {

// Adapts a metric of the host's registry to the plugin boundary's handle.
class RegistryMetric final : public plugin::PluginMetric {
 public:
  explicit RegistryMetric(observability::PluginMetric& metric) : metric_(metric) {}
  void record(double value) noexcept override { metric_.record(value); }

 private:
  observability::PluginMetric& metric_;
};

}  // namespace

plugin::PluginMetric* WorkerContext::metric(warren_metric_type type, std::string_view name,
                                            std::string_view help,
                                            std::span<const double> buckets) noexcept {
  try {
    observability::PluginMetricType kind;
    switch (type) {
      case WARREN_METRIC_COUNTER:
        kind = observability::PluginMetricType::counter;
        break;
      case WARREN_METRIC_GAUGE:
        kind = observability::PluginMetricType::gauge;
        break;
      case WARREN_METRIC_HISTOGRAM:
        kind = observability::PluginMetricType::histogram;
        break;
      default:
        log(plugin::LogLevel::warn, "plugin asked for a metric of unknown type " +
                                        std::to_string(static_cast<int>(type)) + "; refused");
        return nullptr;
    }
    std::string error;
    auto* metric = metrics_.plugin_metric(worker_, plugin_, kind, name, help, buckets, error);
    if (metric == nullptr) {
      log(plugin::LogLevel::warn, "plugin metric refused: " + error);
      return nullptr;
    }
    std::lock_guard lock(metrics_mutex_);
    plugin_metrics_.push_back(std::make_unique<RegistryMetric>(*metric));
    return plugin_metrics_.back().get();
  } catch (...) {
    return nullptr;
  }
}

}  // namespace warren::runtime
