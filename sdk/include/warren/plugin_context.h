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
#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"
#include "warren/log_level.h"
#include "warren/metrics.h"

namespace warren {

namespace detail {
struct SdkGlue;
}
class Context;

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

  // debug and trace (SDK 1.2) are written only when the worker's [log] level lets them through;
  // below it, or on a host older than SDK 1.2, they are dropped here, before reaching the host.
  void log_trace(std::string_view text) const noexcept { log(LogLevel::trace, text); }
  void log_debug(std::string_view text) const noexcept { log(LogLevel::debug, text); }
  void log_info(std::string_view text) const noexcept { log(LogLevel::info, text); }
  void log_warn(std::string_view text) const noexcept { log(LogLevel::warn, text); }
  void log_error(std::string_view text) const noexcept { log(LogLevel::error, text); }

  // Whether a line at `level` would be written: guard a debug line that is costly to compose,
  //   if (ctx.log_enabled(warren::LogLevel::debug)) ctx.log_debug("state: " + dump(state));
  // Always true for info and above; false for debug and trace on a host older than SDK 1.2.
  bool log_enabled(LogLevel level) const noexcept {
    switch (level) {
      case LogLevel::trace:
      case LogLevel::debug:
        return WARREN_HOST_HAS(plugin_log_enabled) &&
               host_->plugin_log_enabled(
                   host_plugin_,
                   static_cast<std::uint32_t>(level == LogLevel::trace ? WARREN_LOG_TRACE
                                                                       : WARREN_LOG_DEBUG)) != 0;
      default:
        return true;
    }
  }

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

  // Labelled metrics (SDK 1.2, see metrics.h): the label names, at most kMaxMetricLabels, each
  // a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__") other than worker,
  // plugin, le and quantile (the host's and Prometheus' own). On a host older than SDK 1.2 the
  // metric is registered without labels and every update is recorded in it, unlabelled.
  LabelledCounter counter(std::string_view name, std::string_view help,
                          const std::vector<std::string_view>& label_names) const noexcept {
    return LabelledCounter(
        make_labelled<Counter>(MetricType::counter, name, help, {}, label_names));
  }
  LabelledGauge gauge(std::string_view name, std::string_view help,
                      const std::vector<std::string_view>& label_names) const noexcept {
    return LabelledGauge(make_labelled<Gauge>(MetricType::gauge, name, help, {}, label_names));
  }
  LabelledHistogram histogram(std::string_view name, std::string_view help,
                              const std::vector<double>& buckets,
                              const std::vector<std::string_view>& label_names) const noexcept {
    return LabelledHistogram(
        make_labelled<Histogram>(MetricType::histogram, name, help, buckets, label_names));
  }

 private:
  friend struct detail::SdkGlue;
  friend class Context;  // logs through abi_level

  PluginContext(const warren_host_api* host, void* host_plugin) noexcept
      : host_(host), host_plugin_(host_plugin) {}

  const warren_host_api* host_api() const noexcept { return host_; }

  // The ABI's number for `level`, or 0 when the line is not to be sent: debug and trace go only
  // to a host that said it writes them (an older host would read them as warnings).
  std::uint32_t abi_level(LogLevel level) const noexcept {
    switch (level) {
      case LogLevel::trace:
        return log_enabled(level) ? WARREN_LOG_TRACE : 0;
      case LogLevel::debug:
        return log_enabled(level) ? WARREN_LOG_DEBUG : 0;
      case LogLevel::info:
        return WARREN_LOG_INFO;
      case LogLevel::warn:
        return WARREN_LOG_WARN;
      case LogLevel::error:
      case LogLevel::critical:
        return WARREN_LOG_ERROR;
    }
    return WARREN_LOG_ERROR;
  }

  void log(LogLevel level, std::string_view text) const noexcept {
    if (const std::uint32_t abi = abi_level(level))
      host_->plugin_log(host_plugin_, abi, detail::to_abi(text));
  }

  template <class M>
  Labelled<M> make_labelled(MetricType type, std::string_view name, std::string_view help,
                            const std::vector<double>& buckets,
                            const std::vector<std::string_view>& label_names) const noexcept {
    if (!WARREN_HOST_HAS(plugin_labelled_metric) || !WARREN_HOST_HAS(metric_series))
      return Labelled<M>(host_, make(type, name, help, buckets), false);
    std::vector<warren_str> names;
    try {
      names.reserve(label_names.size());
    } catch (...) {
      return Labelled<M>();
    }
    for (const std::string_view label : label_names)
      names.push_back(detail::to_abi(label));
    return Labelled<M>(
        host_,
        host_->plugin_labelled_metric(host_plugin_, static_cast<std::uint32_t>(type),
                                      detail::to_abi(name), detail::to_abi(help), buckets.data(),
                                      buckets.size(), names.data(), names.size()),
        true);
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
