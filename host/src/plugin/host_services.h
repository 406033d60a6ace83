// The host's side of the plugin ABI: what a plugin may ask of its worker and of the message it
// is handling. The runtime implements these interfaces; host_api.cc adapts them to the C table of
// warren/abi.h. Keeping them here lets the plugin loader know nothing of the runtime.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "warren/abi.h"

namespace warren::plugin {

enum class LogLevel { info, warn, error };

// A metric the runtime created for a plugin (warren_plugin_<name>{worker,plugin}). The C ABI's
// metric_record receives only this handle, so the handle itself must know how to record. Owned
// by the WorkerServices that made it; lives as long as the worker.
class PluginMetric {
 public:
  virtual ~PluginMetric() = default;
  // Counter: add; histogram: observe; gauge: set. Thread-safe.
  virtual void record(double value) noexcept = 0;
};

// One per worker; lives as long as the worker's handler instance.
class WorkerServices {
 public:
  virtual ~WorkerServices() = default;
  virtual std::string_view worker_name() const noexcept = 0;
  virtual void log(LogLevel level, std::string_view text) noexcept = 0;
  // Valid for the worker's lifetime.
  virtual const std::string* setting(std::string_view key) const noexcept = 0;
  // nullptr when refused (the implementation logs why). `type` is one of warren_metric_type's
  // values (host_api.cc refuses others before calling).
  virtual PluginMetric* metric(warren_metric_type type, std::string_view name,
                               std::string_view help, std::span<const double> buckets) noexcept = 0;
};

// One per message being handled.
class MessageServices {
 public:
  virtual ~MessageServices() = default;
  virtual void log(LogLevel level, std::string_view text) noexcept = 0;
  virtual std::optional<std::string_view> header(std::string_view name) const noexcept = 0;
  virtual bool stop_requested() const noexcept = 0;
  virtual void* scope() const noexcept = 0;
  virtual void set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept = 0;
  // std::nullopt on success, else the reason.
  virtual std::optional<std::string> publish(const warren_publish_request& request) noexcept = 0;
  virtual void report(const warren_outcome& outcome) noexcept = 0;
};

// The C table handed to plugins; `host_plugin` is a WorkerServices*, `host_message` a
// MessageServices*, a metric handle a PluginMetric*.
const warren_host_api& host_api() noexcept;

}  // namespace warren::plugin
