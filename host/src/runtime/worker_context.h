// The host's side of a worker's PluginContext: its name, settings, logging and plugin metrics.
#pragma once

#include <map>
#include <string>

#include "observability/log.h"
#include "observability/metrics.h"
#include "warren/host_abi/labelled_metric.h"
#include "warren/host_abi/services.h"

namespace warren::runtime {

class WorkerContext final : public host_abi::WorkerServices {
 public:
  // metric_series_limit: the bound on the series of each labelled plugin metric.
  WorkerContext(std::string worker, std::string plugin, std::map<std::string, std::string> settings,
                observability::Metrics& metrics,
                std::size_t metric_series_limit = host_abi::kDefaultMetricSeriesLimit);

  std::string_view worker_name() const noexcept override { return worker_; }
  void log(LogLevel level, std::string_view text) noexcept override;
  const std::string* setting(std::string_view key) const noexcept override;
  host_abi::PluginMetric* metric(MetricType type, const std::string& exported_name,
                                 std::string_view help, std::span<const double> buckets,
                                 std::string& refusal) noexcept override;
  host_abi::PluginMetric* labelled_metric(MetricType type, const std::string& exported_name,
                                          std::string_view help, std::span<const double> buckets,
                                          std::span<const std::string> label_names,
                                          std::string& refusal) noexcept override;
  // The process's [log] level: a debug line below it is not even composed by the plugin.
  bool log_enabled(LogLevel level) const noexcept override;

  observability::Metrics& metrics() noexcept { return metrics_; }

 private:
  std::string worker_;
  std::string plugin_;
  std::map<std::string, std::string, std::less<>> settings_;
  observability::Metrics& metrics_;
  std::size_t metric_series_limit_;
};

}  // namespace warren::runtime
