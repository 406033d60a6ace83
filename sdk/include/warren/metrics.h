// Plugin-defined metrics. They live in the host's registry (exposed on /metrics as
// warren_plugin_<name>{worker,plugin}), never in a registry of the plugin's own. A handle comes
// from PluginContext::counter/gauge/histogram; default-constructed, it records nothing.
#pragma once

#include <cstdint>
#include <string_view>

#include "warren/abi.h"

namespace warren {

class PluginContext;

// The kind of a plugin metric, as the host, the harness and abi.h's warren_metric_type number it.
enum class MetricType : std::uint32_t {
  counter = WARREN_METRIC_COUNTER,
  histogram = WARREN_METRIC_HISTOGRAM,
  gauge = WARREN_METRIC_GAUGE,
};

constexpr std::string_view to_string(MetricType type) noexcept {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::histogram:
      return "histogram";
    case MetricType::gauge:
      return "gauge";
  }
  return "invalid";
}

// A handle that does nothing when the host refused the metric (the host logs why).
class Metric {
 public:
  Metric() = default;

  bool valid() const noexcept { return handle_ != nullptr; }

 protected:
  Metric(const warren_host_api* host, void* handle) noexcept : host_(host), handle_(handle) {}

  void record(double value) const noexcept {
    if (handle_ != nullptr)
      host_->metric_record(handle_, value);
  }

 private:
  const warren_host_api* host_ = nullptr;
  void* handle_ = nullptr;
};

class Counter : public Metric {
 public:
  Counter() = default;
  // A negative increment is ignored: a counter only goes up.
  void inc(double amount = 1.0) const noexcept { record(amount); }

 private:
  friend class PluginContext;
  Counter(const warren_host_api* host, void* handle) noexcept : Metric(host, handle) {}
};

class Histogram : public Metric {
 public:
  Histogram() = default;
  void observe(double value) const noexcept { record(value); }

 private:
  friend class PluginContext;
  Histogram(const warren_host_api* host, void* handle) noexcept : Metric(host, handle) {}
};

class Gauge : public Metric {
 public:
  Gauge() = default;
  void set(double value) const noexcept { record(value); }

 private:
  friend class PluginContext;
  Gauge(const warren_host_api* host, void* handle) noexcept : Metric(host, handle) {}
};

}  // namespace warren
