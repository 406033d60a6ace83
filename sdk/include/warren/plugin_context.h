// What a handler receives at construction, once per worker (like a BackgroundService's
// constructor): its settings, logging, and metrics. It outlives the handler instance, so a
// handler may keep a reference to it. Only the SDK's glue (plugin.h) creates one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "warren/abi.h"
#include "warren/detail/strings.h"
#include "warren/metrics.h"

namespace warren {

namespace detail {
struct SdkGlue;
}

class PluginContext {
 public:
  PluginContext(const PluginContext&) = delete;
  PluginContext& operator=(const PluginContext&) = delete;

  // A value of the worker's [workers.settings] table, scalars rendered as strings. An owned
  // copy: keep it as long as you like.
  std::optional<std::string> setting(std::string_view key) const {
    warren_str value{};
    if (host_->plugin_setting(host_plugin_, detail::to_abi(key), &value) == 0) {
      return std::nullopt;
    }
    return std::string(detail::from_abi(value));
  }

  // Valid as long as this PluginContext.
  std::string_view worker_name() const noexcept {
    return detail::from_abi(host_->plugin_worker_name(host_plugin_));
  }

  void log_info(std::string_view text) const noexcept { log(WARREN_LOG_INFO, text); }
  void log_warn(std::string_view text) const noexcept { log(WARREN_LOG_WARN, text); }
  void log_error(std::string_view text) const noexcept { log(WARREN_LOG_ERROR, text); }

  // Metrics named warren_plugin_<name> (the prefix is added when missing). Create them in the
  // constructor and keep the handles; recording is lock-free and thread-safe. A name is
  // letters, digits, '_' and ':' (Prometheus' rule for the whole exported name). Asking again
  // for a name and type this worker already has returns the same metric; a refused metric
  // (bad name, another type under that name, bad buckets) is a handle that records nothing,
  // and the host logs why.
  Counter counter(std::string_view name, std::string_view help) const noexcept {
    return Counter(host_, make(MetricType::counter, name, help, {}));
  }
  Gauge gauge(std::string_view name, std::string_view help) const noexcept {
    return Gauge(host_, make(MetricType::gauge, name, help, {}));
  }
  // Upper bounds of the buckets, at least one, strictly increasing (e.g. seconds).
  Histogram histogram(std::string_view name, std::string_view help,
                      const std::vector<double>& buckets) const noexcept {
    return Histogram(host_, make(MetricType::histogram, name, help, buckets));
  }

 private:
  friend struct detail::SdkGlue;

  PluginContext(const warren_host_api* host, void* host_plugin) noexcept
      : host_(host), host_plugin_(host_plugin) {}

  const warren_host_api* host_api() const noexcept { return host_; }

  void log(warren_log_level level, std::string_view text) const noexcept {
    host_->plugin_log(host_plugin_, static_cast<std::uint32_t>(level), detail::to_abi(text));
  }

  void* make(MetricType type, std::string_view name, std::string_view help,
             const std::vector<double>& buckets) const noexcept {
    return host_->plugin_metric(host_plugin_, static_cast<std::uint32_t>(type),
                                detail::to_abi(name), detail::to_abi(help), buckets.data(),
                                buckets.size());
  }

  const warren_host_api* host_;
  void* host_plugin_;
};

}  // namespace warren
