// See worker_context.h.
#include "runtime/worker_context.h"

#include "observability/log.h"

namespace warren::runtime {

WorkerContext::WorkerContext(std::string worker, std::string plugin,
                             std::map<std::string, std::string> settings,
                             observability::Metrics& metrics)
    : worker_(std::move(worker)),
      plugin_(std::move(plugin)),
      settings_(settings.begin(), settings.end()),
      metrics_(metrics) {}

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

}  // namespace warren::runtime
