// The host's side of a worker's PluginContext: its name, settings, logging and plugin metrics.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "observability/log.h"
#include "observability/metrics.h"
#include "plugin/host_services.h"

namespace warren::runtime {

class WorkerContext final : public plugin::WorkerServices {
 public:
  WorkerContext(std::string worker, std::string plugin, std::map<std::string, std::string> settings,
                observability::Metrics& metrics);

  std::string_view worker_name() const noexcept override { return worker_; }
  void log(plugin::LogLevel level, std::string_view text) noexcept override;
  const std::string* setting(std::string_view key) const noexcept override;
  plugin::PluginMetric* metric(warren_metric_type type, std::string_view name,
                               std::string_view help,
                               std::span<const double> buckets) noexcept override;

  observability::Metrics& metrics() noexcept { return metrics_; }

 private:
  std::string worker_;
  std::string plugin_;
  std::map<std::string, std::string, std::less<>> settings_;
  observability::Metrics& metrics_;
  std::mutex metrics_mutex_;
  std::vector<std::unique_ptr<plugin::PluginMetric>> plugin_metrics_;
};

observability::LogLevel to_log_level(plugin::LogLevel level) noexcept;

}  // namespace warren::runtime
