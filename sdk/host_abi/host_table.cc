// The warren_host_api table: plain C functions that turn the opaque handles back into the
// WorkerServices / MessageServices / PluginMetric they stand for, check and convert what the
// plugin passed, and forward.
//
// Everything arriving from a plugin is distrusted: null handles are ignored, null string data is
// read as an empty string, structs smaller than ABI 1.0 are refused, and no exception leaves
// these functions (they are called from plugin code, where an exception would be fatal).
#include "warren/host_abi/host_table.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"
#include "warren/host_abi/metric_rules.h"
#include "warren/host_abi/reported_outcome.h"
#include "warren/host_abi/services.h"

namespace warren::host_abi {
namespace {

using detail::copy_to_buffer;
using detail::from_abi;
using detail::to_abi;

// A string handed back to the plugin: never null data, even for an empty value.
warren_str to_plugin(std::string_view text) noexcept {
  return text.data() == nullptr ? warren_str{"", 0} : to_abi(text);
}

// Unknown levels are logged as warnings rather than dropped.
LogLevel log_level_from_abi(std::uint32_t level) noexcept {
  switch (level) {
    case WARREN_LOG_TRACE:
      return LogLevel::trace;
    case WARREN_LOG_DEBUG:
      return LogLevel::debug;
    case WARREN_LOG_INFO:
      return LogLevel::info;
    case WARREN_LOG_ERROR:
      return LogLevel::error;
    default:
      return LogLevel::warn;
  }
}

WorkerServices* worker(void* host_plugin) noexcept {
  return static_cast<WorkerServices*>(host_plugin);
}
MessageServices* message(void* host_message) noexcept {
  return static_cast<MessageServices*>(host_message);
}

// ---- Worker level ----

void plugin_log(void* host_plugin, std::uint32_t level, warren_str text) noexcept {
  if (host_plugin == nullptr)
    return;
  worker(host_plugin)->log(log_level_from_abi(level), from_abi(text));
}

int plugin_setting(void* host_plugin, warren_str key, warren_str* value) noexcept {
  if (host_plugin == nullptr || value == nullptr)
    return 0;
  const std::string* setting = worker(host_plugin)->setting(from_abi(key));
  if (setting == nullptr)
    return 0;
  *value = to_plugin(*setting);
  return 1;
}

warren_str plugin_worker_name(void* host_plugin) noexcept {
  if (host_plugin == nullptr)
    return warren_str{"", 0};
  return to_plugin(worker(host_plugin)->worker_name());
}

// The metric, or nullptr with the refusal logged through the worker.
PluginMetric* checked_metric(WorkerServices& services, std::uint32_t abi_type, warren_str name,
                             warren_str help, std::span<const double> buckets) {
  const std::string exported = exported_metric_name(from_abi(name));
  const std::optional<MetricType> type = metric_type_from_abi(abi_type);
  std::string refusal;
  if (!type) {
    refusal = "unknown metric type " + std::to_string(abi_type);
  } else if (std::optional<std::string> rule = metric_refusal(*type, exported, buckets)) {
    refusal = std::move(*rule);
  } else if (PluginMetric* metric =
                 services.metric(*type, exported, from_abi(help), buckets, refusal)) {
    return metric;
  }
  services.log(LogLevel::warn, "plugin metric '" + exported + "' refused: " + refusal);
  return nullptr;
}

void* plugin_metric(void* host_plugin, std::uint32_t type, warren_str name, warren_str help,
                    const double* buckets, std::size_t bucket_count) noexcept {
  if (host_plugin == nullptr)
    return nullptr;
  try {
    const std::span<const double> bucket_span =
        buckets == nullptr ? std::span<const double>{} : std::span(buckets, bucket_count);
    return checked_metric(*worker(host_plugin), type, name, help, bucket_span);
  } catch (...) {  // Out of memory while checking or logging: the metric is refused.
    return nullptr;
  }
}

int plugin_log_enabled(void* host_plugin, std::uint32_t level) noexcept {
  if (host_plugin == nullptr)
    return 0;
  switch (level) {
    case WARREN_LOG_TRACE:
    case WARREN_LOG_DEBUG:
    case WARREN_LOG_INFO:
    case WARREN_LOG_WARN:
    case WARREN_LOG_ERROR:
      return worker(host_plugin)->log_enabled(log_level_from_abi(level)) ? 1 : 0;
    default:
      return 0;
  }
}

// The labelled metric, or nullptr with the refusal logged through the worker.
PluginMetric* checked_labelled_metric(WorkerServices& services, std::uint32_t abi_type,
                                      warren_str name, warren_str help,
                                      std::span<const double> buckets,
                                      std::span<const warren_str> abi_label_names) {
  const std::string exported = exported_metric_name(from_abi(name));
  const std::optional<MetricType> type = metric_type_from_abi(abi_type);
  std::vector<std::string> label_names;
  if (abi_label_names.size() <= kMaxMetricLabels) {
    for (const warren_str label : abi_label_names)
      label_names.emplace_back(from_abi(label));
  }
  std::string refusal;
  if (!type) {
    refusal = "unknown metric type " + std::to_string(abi_type);
  } else if (std::optional<std::string> rule = metric_refusal(*type, exported, buckets)) {
    refusal = std::move(*rule);
  } else if (abi_label_names.size() > kMaxMetricLabels) {
    refusal = std::to_string(abi_label_names.size()) + " label names, more than the " +
              std::to_string(kMaxMetricLabels) + " a metric may have";
  } else if (std::optional<std::string> labels = label_names_refusal(label_names)) {
    refusal = std::move(*labels);
  } else if (PluginMetric* metric = services.labelled_metric(*type, exported, from_abi(help),
                                                             buckets, label_names, refusal)) {
    return metric;
  }
  services.log(LogLevel::warn, "plugin metric '" + exported + "' refused: " + refusal);
  return nullptr;
}

void* plugin_labelled_metric(void* host_plugin, std::uint32_t type, warren_str name,
                             warren_str help, const double* buckets, std::size_t bucket_count,
                             const warren_str* label_names, std::size_t label_count) noexcept {
  if (host_plugin == nullptr || (label_names == nullptr && label_count > 0))
    return nullptr;
  try {
    const std::span<const double> bucket_span =
        buckets == nullptr ? std::span<const double>{} : std::span(buckets, bucket_count);
    const std::span<const warren_str> names = label_names == nullptr
                                                  ? std::span<const warren_str>{}
                                                  : std::span(label_names, label_count);
    return checked_labelled_metric(*worker(host_plugin), type, name, help, bucket_span, names);
  } catch (...) {  // Out of memory while checking or logging: the metric is refused.
    return nullptr;
  }
}

void* metric_series(void* metric, const warren_str* label_values,
                    std::size_t label_count) noexcept {
  if (metric == nullptr || (label_values == nullptr && label_count > 0))
    return nullptr;
  auto* labelled = static_cast<PluginMetric*>(metric);
  if (label_count != labelled->label_count() || label_count > kMaxMetricLabels)
    return nullptr;
  std::array<std::string_view, kMaxMetricLabels> values{};
  for (std::size_t i = 0; i < label_count; ++i)
    values[i] = from_abi(label_values[i]);
  return labelled->series(std::span(values.data(), label_count));
}

void metric_record(void* metric, double value) noexcept {
  if (metric == nullptr)
    return;
  static_cast<PluginMetric*>(metric)->record(value);
}

// ---- Message level ----

void message_log(void* host_message, std::uint32_t level, warren_str text) noexcept {
  if (host_message == nullptr)
    return;
  message(host_message)->log(log_level_from_abi(level), from_abi(text));
}

int message_header(void* host_message, warren_str name, warren_str* value) noexcept {
  if (host_message == nullptr || value == nullptr)
    return 0;
  const std::optional<std::string_view> header = message(host_message)->header(from_abi(name));
  if (!header)
    return 0;
  *value = to_plugin(*header);
  return 1;
}

int message_stop_requested(void* host_message) noexcept {
  if (host_message == nullptr)
    return 0;
  return message(host_message)->stop_requested() ? 1 : 0;
}

void* message_scope(void* host_message) noexcept {
  if (host_message == nullptr)
    return nullptr;
  return message(host_message)->scope();
}

void message_set_scope(void* host_message, void* scope, warren_scope_destroy_fn destroy) noexcept {
  if (host_message == nullptr)
    return;
  message(host_message)->set_scope(scope, destroy);
}

// Why the request cannot be published as it is, or nullptr.
const char* publish_request_refusal(const warren_publish_request* request) noexcept {
  if (request == nullptr)
    return "publish refused: the plugin passed no publish request";
  if (request->struct_size < detail::kPublishRequestV1_0Size)
    return "publish refused: the publish request is smaller than Warren ABI 1.0's";
  if (request->header_count > 0 &&
      (request->header_names == nullptr || request->header_values == nullptr)) {
    return "publish refused: header_count is set but the header arrays are missing";
  }
  return nullptr;
}

OutgoingMessage outgoing_message(const warren_publish_request& request) {
  OutgoingMessage out;
  out.exchange = from_abi(request.exchange);
  out.routing_key = from_abi(request.routing_key);
  out.body = from_abi(request.body);
  out.content_type = from_abi(request.content_type);
  out.message_id = from_abi(request.message_id);
  out.headers.reserve(request.header_count);
  for (std::size_t i = 0; i < request.header_count; ++i) {
    out.headers.emplace_back(from_abi(request.header_names[i]), from_abi(request.header_values[i]));
  }
  // Plugins older than ABI 1.2 have no flags: their publishes are mandatory.
  out.mandatory = request.struct_size < detail::kPublishRequestV1_2Size ||
                  (request.flags & WARREN_PUBLISH_NOT_MANDATORY) == 0;
  return out;
}

int message_publish(void* host_message, const warren_publish_request* request, char* error,
                    std::size_t error_capacity) noexcept {
  if (host_message == nullptr) {
    copy_to_buffer("publish refused: the plugin passed no message handle", error, error_capacity);
    return 1;
  }
  if (const char* refusal = publish_request_refusal(request)) {
    copy_to_buffer(refusal, error, error_capacity);
    return 1;
  }
  try {
    const std::optional<std::string> failure =
        message(host_message)->publish(outgoing_message(*request));
    if (!failure)
      return 0;
    copy_to_buffer(*failure, error, error_capacity);
  } catch (const std::exception& e) {
    copy_to_buffer(std::string("publish failed in the host: ") + e.what(), error, error_capacity);
  } catch (...) {
    copy_to_buffer("publish failed in the host", error, error_capacity);
  }
  return 1;
}

void message_report(void* host_message, const warren_outcome* outcome) noexcept {
  if (host_message == nullptr)
    return;
  ReportedOutcome reported;
  try {
    reported = read_outcome(outcome);
  } catch (...) {  // Out of memory copying the reason: the report is unusable.
    reported = ReportedOutcome{};
  }
  message(host_message)->report(std::move(reported));
}

constexpr warren_host_api kHostTable = {
    .struct_size = sizeof(warren_host_api),
    .abi_major = WARREN_ABI_MAJOR,
    .abi_minor = WARREN_ABI_MINOR,
    .plugin_log = &plugin_log,
    .plugin_setting = &plugin_setting,
    .plugin_worker_name = &plugin_worker_name,
    .plugin_metric = &plugin_metric,
    .metric_record = &metric_record,
    .message_log = &message_log,
    .message_header = &message_header,
    .message_stop_requested = &message_stop_requested,
    .message_scope = &message_scope,
    .message_set_scope = &message_set_scope,
    .message_publish = &message_publish,
    .message_report = &message_report,
    .plugin_log_enabled = &plugin_log_enabled,
    .plugin_labelled_metric = &plugin_labelled_metric,
    .metric_series = &metric_series,
};
static_assert(sizeof(warren_host_api) >= detail::kHostApiV1_2Size);

}  // namespace

const warren_host_api& host_table() noexcept {
  return kHostTable;
}

}  // namespace warren::host_abi
