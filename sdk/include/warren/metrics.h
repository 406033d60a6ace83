// Plugin-defined metrics. They live in the host's registry (exposed on /metrics as
// warren_plugin_<name>{worker,plugin}), never in a registry of the plugin's own.
#pragma once

#include "warren/abi.h"

namespace warren {

// A handle that does nothing when the host refused the metric (the host logs why).
class Metric {
 public:
  Metric() = default;
  Metric(const warren_host_api* host, void* handle) noexcept : host_(host), handle_(handle) {}

  bool valid() const noexcept { return handle_ != nullptr; }

 protected:
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
  using Metric::Metric;
  void inc(double amount = 1.0) const noexcept { record(amount); }
};

class Histogram : public Metric {
 public:
  using Metric::Metric;
  void observe(double value) const noexcept { record(value); }
};

class Gauge : public Metric {
 public:
  using Metric::Metric;
  void set(double value) const noexcept { record(value); }
};

}  // namespace warren
