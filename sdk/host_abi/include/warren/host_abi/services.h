// The host's side of the plugin ABI, as two interfaces: what a plugin may ask of its worker
// (WorkerServices) and of the message it is handling (MessageServices). The host's runtime
// implements them over its log, metrics registry and transport; the test harness implements
// them in memory. host_table.h adapts them to abi.h's C table after checking every call, so
// both implementations receive the same, already validated C++ values and never see a raw
// warren_str, a null pointer or a struct from another minor.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "warren/abi.h"
#include "warren/host_abi/plugin_metric.h"
#include "warren/host_abi/reported_outcome.h"
#include "warren/log_level.h"
#include "warren/metrics.h"
#include "warren/outgoing_message.h"

namespace warren::host_abi {

// One per worker; lives as long as the worker's plugin instance. Called from any of the
// worker's threads at once: implementations are thread-safe.
class WorkerServices {
 public:
  virtual ~WorkerServices() = default;
  // Valid for the worker's lifetime.
  virtual std::string_view worker_name() const noexcept = 0;
  virtual void log(LogLevel level, std::string_view text) noexcept = 0;
  // Valid for the worker's lifetime; nullptr when the setting does not exist.
  virtual const std::string* setting(std::string_view key) const noexcept = 0;
  // This worker's metric `exported_name`, which already follows metric_rules.h. Asked again
  // with the same name and type, the same handle. nullptr with `refusal` set when the registry
  // refuses it (the name belongs to another type); the adapter logs the refusal. The handle
  // lives as long as the worker.
  virtual PluginMetric* metric(MetricType type, const std::string& exported_name,
                               std::string_view help, std::span<const double> buckets,
                               std::string& refusal) noexcept = 0;
  // The same for a metric with label names (already checked: label_names_refusal): a
  // LabelledMetric (labelled_metric.h) whose series carry the worker's bound. Asked again with
  // the same name, type and label names, the same handle; other label names are refused
  // (label_clash).
  virtual PluginMetric* labelled_metric(MetricType type, const std::string& exported_name,
                                        std::string_view help, std::span<const double> buckets,
                                        std::span<const std::string> label_names,
                                        std::string& refusal) noexcept = 0;
  // Whether a line of `level` would be written now (the plugin skips composing the others).
  // Everything, unless the implementation has a level.
  virtual bool log_enabled(LogLevel level) const noexcept {
    (void)level;
    return true;
  }
};

// One per message being handled, from delivery to settlement; used by one thread at a time.
class MessageServices {
 public:
  virtual ~MessageServices() = default;
  virtual void log(LogLevel level, std::string_view text) noexcept = 0;
  // Valid until the handler returns.
  virtual std::optional<std::string_view> header(std::string_view name) const noexcept = 0;
  virtual bool stop_requested() const noexcept = 0;
  // The plugin's per-message scope object (see message_scope.h for the rules).
  virtual void* scope() const noexcept = 0;
  virtual void set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept = 0;
  // Publishes with a confirm: std::nullopt on success, else the reason.
  virtual std::optional<std::string> publish(OutgoingMessage message) noexcept = 0;
  // Once per handler call, with what the handler reported (read_outcome). A plugin that breaks
  // the one-report rule reaches here twice, or not at all: the implementation decides.
  virtual void report(ReportedOutcome outcome) noexcept = 0;
};

}  // namespace warren::host_abi
