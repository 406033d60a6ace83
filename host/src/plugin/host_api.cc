// The warren_host_api table handed to every plugin: plain C functions that turn the opaque
// handles back into the runtime's WorkerServices / MessageServices / PluginMetric and forward.
//
// Everything arriving from a plugin is distrusted: null handles are ignored, null string data is
// read as an empty string, structs smaller than ABI 1.0 are refused, and no exception leaves
// these functions (they are called from plugin code, where an exception would be fatal).
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/host_services.h"

namespace warren::plugin {
namespace {

// The sizes of the ABI 1.0 structs: up to the end of their last 1.0 field.
constexpr std::size_t kOutcomeV1_0Size =
    offsetof(warren_outcome, error_type) + sizeof(warren_outcome::error_type);
constexpr std::size_t kPublishRequestV1_0Size =
    offsetof(warren_publish_request, header_count) + sizeof(warren_publish_request::header_count);

std::string_view view(warren_str text) noexcept {
  return text.data == nullptr ? std::string_view{} : std::string_view(text.data, text.size);
}

// The same string, with null data replaced by "" so the runtime never sees a null pointer.
warren_str normalized(warren_str text) noexcept {
  return text.data == nullptr ? warren_str{"", 0} : text;
}

warren_str to_abi(std::string_view text) noexcept {
  return warren_str{text.data(), text.size()};
}

// Unknown levels are logged as warnings rather than dropped.
LogLevel log_level(uint32_t level) noexcept {
  switch (level) {
    case WARREN_LOG_INFO:
      return LogLevel::info;
    case WARREN_LOG_ERROR:
      return LogLevel::error;
    default:
      return LogLevel::warn;
  }
}

// Copies `text` into the plugin's buffer, truncated and always NUL-terminated.
void copy_reason(std::string_view text, char* buffer, size_t capacity) noexcept {
  if (buffer == nullptr || capacity == 0)
    return;
  const size_t length = std::min(text.size(), capacity - 1);
  std::memcpy(buffer, text.data(), length);
  buffer[length] = '\0';
}

// A prefix-only copy: fields the plugin's (older) struct lacks stay zero.
template <class Struct>
Struct copy_prefix(const Struct& source) noexcept {
  Struct copy{};
  std::memcpy(&copy, &source, std::min<size_t>(source.struct_size, sizeof copy));
  copy.struct_size = sizeof copy;
  return copy;
}

WorkerServices* worker(void* host_plugin) noexcept {
  return static_cast<WorkerServices*>(host_plugin);
}
MessageServices* message(void* host_message) noexcept {
  return static_cast<MessageServices*>(host_message);
}

// ---- Worker level ----

void plugin_log(void* host_plugin, uint32_t level, warren_str text) noexcept {
  if (host_plugin == nullptr)
    return;
  worker(host_plugin)->log(log_level(level), view(text));
}

int plugin_setting(void* host_plugin, warren_str key, warren_str* value) noexcept {
  if (host_plugin == nullptr || value == nullptr)
    return 0;
  const std::string* setting = worker(host_plugin)->setting(view(key));
  if (setting == nullptr)
    return 0;
  *value = to_abi(*setting);
  return 1;
}

warren_str plugin_worker_name(void* host_plugin) noexcept {
  if (host_plugin == nullptr)
    return warren_str{"", 0};
  return normalized(to_abi(worker(host_plugin)->worker_name()));
}

void* plugin_metric(void* host_plugin, uint32_t type, warren_str name, warren_str help,
                    const double* buckets, size_t bucket_count) noexcept {
  if (host_plugin == nullptr)
    return nullptr;
  WorkerServices& services = *worker(host_plugin);
  if (type != WARREN_METRIC_COUNTER && type != WARREN_METRIC_HISTOGRAM &&
      type != WARREN_METRIC_GAUGE) {
    try {
      services.log(LogLevel::error, "plugin metric \"" + std::string(view(name)) +
                                        "\" refused: unknown metric type " + std::to_string(type));
    } catch (...) {  // Out of memory while building the message: the refusal still stands.
    }
    return nullptr;
  }
  const std::span<const double> bucket_span = buckets == nullptr
                                                  ? std::span<const double>{}
                                                  : std::span<const double>(buckets, bucket_count);
  return services.metric(static_cast<warren_metric_type>(type), view(name), view(help),
                         bucket_span);
}

void metric_record(void* metric, double value) noexcept {
  if (metric == nullptr)
    return;
  static_cast<PluginMetric*>(metric)->record(value);
}

// ---- Message level ----

void message_log(void* host_message, uint32_t level, warren_str text) noexcept {
  if (host_message == nullptr)
    return;
  message(host_message)->log(log_level(level), view(text));
}

int message_header(void* host_message, warren_str name, warren_str* value) noexcept {
  if (host_message == nullptr || value == nullptr)
    return 0;
  const std::optional<std::string_view> header = message(host_message)->header(view(name));
  if (!header)
    return 0;
  *value = normalized(to_abi(*header));
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

int message_publish(void* host_message, const warren_publish_request* request, char* error,
                    size_t error_capacity) noexcept {
  if (host_message == nullptr) {
    copy_reason("publish refused: the plugin passed no message handle", error, error_capacity);
    return 1;
  }
  if (request == nullptr) {
    copy_reason("publish refused: the plugin passed no publish request", error, error_capacity);
    return 1;
  }
  if (request->struct_size < kPublishRequestV1_0Size) {
    copy_reason("publish refused: the publish request is smaller than Warren ABI 1.0's", error,
                error_capacity);
    return 1;
  }
  if (request->header_count > 0 &&
      (request->header_names == nullptr || request->header_values == nullptr)) {
    copy_reason("publish refused: header_count is set but the header arrays are missing", error,
                error_capacity);
    return 1;
  }
  try {
    warren_publish_request safe = copy_prefix(*request);
    for (warren_str* text :
         {&safe.exchange, &safe.routing_key, &safe.body, &safe.content_type, &safe.message_id}) {
      *text = normalized(*text);
    }
    std::vector<warren_str> names(safe.header_count);
    std::vector<warren_str> values(safe.header_count);
    for (size_t i = 0; i < safe.header_count; ++i) {
      names[i] = normalized(safe.header_names[i]);
      values[i] = normalized(safe.header_values[i]);
    }
    safe.header_names = names.empty() ? nullptr : names.data();
    safe.header_values = values.empty() ? nullptr : values.data();

    const std::optional<std::string> failure = message(host_message)->publish(safe);
    if (!failure)
      return 0;
    copy_reason(*failure, error, error_capacity);
  } catch (const std::exception& e) {
    if (error != nullptr && error_capacity > 0) {
      std::snprintf(error, error_capacity, "publish failed in the host: %s", e.what());
    }
  } catch (...) {
    copy_reason("publish failed in the host", error, error_capacity);
  }
  return 1;
}

void message_report(void* host_message, const warren_outcome* outcome) noexcept {
  if (host_message == nullptr)
    return;
  warren_outcome safe{};
  safe.struct_size = sizeof safe;
  if (outcome == nullptr || outcome->struct_size < kOutcomeV1_0Size) {
    // Kind 0 is no valid outcome: the runtime treats it as a broken handler.
    safe.kind = 0;
    safe.delay_ms = -1;
    safe.reason =
        to_abi(outcome == nullptr ? "the plugin reported no outcome (null pointer)"
                                  : "the plugin reported an outcome smaller than Warren ABI 1.0's");
  } else {
    safe = copy_prefix(*outcome);
  }
  safe.reason = normalized(safe.reason);
  safe.error_type = normalized(safe.error_type);
  message(host_message)->report(safe);
}

constexpr warren_host_api kHostApi = {
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
};

}  // namespace

const warren_host_api& host_api() noexcept {
  return kHostApi;
}

}  // namespace warren::plugin
