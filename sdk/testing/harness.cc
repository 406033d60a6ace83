// The in-memory fake host behind warren::testing::Harness: the warren_host_api table as plain
// C callbacks over a mutex-guarded record of logs, publishes and metrics, plus the per-delivery
// state (headers, scope, reported outcome) that lives on deliver()'s stack.
#include "warren/testing/harness.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>

#include "warren/detail/strings.h"

namespace warren::testing {
namespace {

using detail::from_abi;
using detail::to_abi;

constexpr std::string_view kMetricPrefix = "warren_plugin_";

std::string demangle(std::string_view mangled) {
  if (mangled.empty())
    return {};
  const std::string name(mangled);
  int status = 0;
  char* readable = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr)
    return name;
  std::string result(readable);
  std::free(readable);
  return result;
}

LogLevel to_log_level(std::uint32_t level) {
  switch (level) {
    case WARREN_LOG_WARN:
      return LogLevel::warn;
    case WARREN_LOG_ERROR:
      return LogLevel::error;
    default:
      return LogLevel::info;
  }
}

bool is_valid_metric_name(std::string_view name) {
  if (name.empty())
    return false;
  auto is_letter = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!is_letter(name.front()))
    return false;
  for (char c : name) {
    if (!is_letter(c) && !(c >= '0' && c <= '9'))
      return false;
  }
  return true;
}

}  // namespace

// A metric handle given to the plugin: stable in memory for the harness's lifetime.
struct MetricSlot {
  Harness::State* state;
  MetricRecord* record;
};

struct Harness::State {
  warren_plugin_descriptor descriptor{};
  Settings settings;
  std::string worker_name;
  void* instance = nullptr;

  mutable std::mutex mutex;  // guards everything below
  std::vector<PublishedMessage> published;
  std::vector<LogRecord> logs;
  std::map<std::string, MetricRecord> metrics;  // std::map: node addresses are stable
  std::deque<MetricSlot> metric_slots;          // deque: element addresses are stable
  std::deque<std::string> publish_failures;

  std::atomic<bool> stop_requested{false};
  std::atomic<std::size_t> live_scopes{0};

  void log(LogLevel level, std::string text, std::string message_id) {
    const std::lock_guard lock(mutex);
    logs.push_back(LogRecord{level, std::move(text), std::move(message_id)});
  }
};

namespace {

// One handle() call: the `host_message` handed to the plugin.
struct Delivery {
  Delivery(Harness::State* owner, const TestMessage* delivered)
      : state(owner), message(delivered) {}

  Harness::State* state;
  const TestMessage* message;
  void* scope = nullptr;
  warren_scope_destroy_fn destroy_scope = nullptr;

  int reports = 0;
  std::uint32_t kind = 0;
  std::int64_t delay_ms = -1;
  std::uint32_t error_kind = WARREN_ERROR_NONE;
  std::string reason;
  std::string error_type;

  // The message is settled: what it attached to its scope dies now.
  void settle() noexcept {
    if (scope == nullptr)
      return;
    void* dying = scope;
    scope = nullptr;
    destroy_scope(dying);
    state->live_scopes.fetch_sub(1);
  }

  Result to_result() const {
    if (reports != 1) {
      throw std::logic_error("the plugin reported " + std::to_string(reports) +
                             " outcomes for message '" + message->message_id +
                             "' instead of exactly one: its handle trampoline is broken");
    }
    Result result;
    result.reason = reason;
    result.error = error_kind == WARREN_ERROR_STD_EXCEPTION ? Result::Error::std_exception
                   : error_kind == WARREN_ERROR_PERMANENT   ? Result::Error::permanent
                   : error_kind == WARREN_ERROR_UNKNOWN     ? Result::Error::unknown
                                                            : Result::Error::none;
    switch (kind) {
      case WARREN_OUTCOME_ACK:
        result.kind = Result::Kind::ack;
        return result;
      case WARREN_OUTCOME_RETRY:
        result.kind = Result::Kind::retry;
        if (delay_ms >= 0)
          result.delay = std::chrono::milliseconds(delay_ms);
        return result;
      case WARREN_OUTCOME_DEAD_LETTER:
        result.kind = Result::Kind::dead_letter;
        return result;
      case WARREN_OUTCOME_THREW:
        result.kind = Result::Kind::retry;
        result.threw = true;
        result.exception_type = demangle(error_type);
        return result;
      case WARREN_OUTCOME_THREW_PERMANENT:
        result.kind = Result::Kind::dead_letter;
        result.threw = true;
        result.exception_type = demangle(error_type);
        return result;
      default:
        throw std::logic_error("the plugin reported an invalid outcome kind " +
                               std::to_string(kind) + " for message '" + message->message_id + "'");
    }
  }
};

Harness::State& worker(void* host_plugin) {
  return *static_cast<Harness::State*>(host_plugin);
}
Delivery& delivery(void* host_message) {
  return *static_cast<Delivery*>(host_message);
}

// ---- worker level (PluginContext) ----

void plugin_log(void* host_plugin, std::uint32_t level, warren_str text) {
  worker(host_plugin).log(to_log_level(level), std::string(from_abi(text)), {});
}

int plugin_setting(void* host_plugin, warren_str key, warren_str* value) {
  const Harness::State& state = worker(host_plugin);
  const auto it = state.settings.find(std::string(from_abi(key)));
  if (it == state.settings.end())
    return 0;
  *value = to_abi(it->second);
  return 1;
}

warren_str plugin_worker_name(void* host_plugin) {
  return to_abi(worker(host_plugin).worker_name);
}

void* plugin_metric(void* host_plugin, std::uint32_t type, warren_str name, warren_str help,
                    const double* buckets, std::size_t bucket_count) {
  Harness::State& state = worker(host_plugin);
  std::string full_name(from_abi(name));
  if (!full_name.starts_with(kMetricPrefix))
    full_name.insert(0, kMetricPrefix);
  auto refuse = [&](const std::string& why) -> void* {
    state.log(LogLevel::error, "metric '" + full_name + "' refused: " + why, {});
    return nullptr;
  };
  if (!is_valid_metric_name(from_abi(name))) {
    return refuse("a metric name is letters, digits and '_', not starting with a digit");
  }
  MetricType metric_type;
  switch (type) {
    case WARREN_METRIC_COUNTER:
      metric_type = MetricType::counter;
      break;
    case WARREN_METRIC_HISTOGRAM:
      metric_type = MetricType::histogram;
      break;
    case WARREN_METRIC_GAUGE:
      metric_type = MetricType::gauge;
      break;
    default:
      return refuse("unknown metric type " + std::to_string(type));
  }
  std::vector<double> bucket_list(buckets, buckets + bucket_count);
  for (std::size_t i = 1; i < bucket_list.size(); ++i) {
    if (!(bucket_list[i - 1] < bucket_list[i])) {
      return refuse("histogram buckets must be strictly increasing");
    }
  }

  const std::lock_guard lock(state.mutex);
  auto [it, inserted] = state.metrics.try_emplace(full_name);
  MetricRecord& record = it->second;
  if (inserted) {
    record.type = metric_type;
    record.help = std::string(from_abi(help));
    record.buckets = std::move(bucket_list);
  } else if (record.type != metric_type) {
    state.logs.push_back(
        LogRecord{LogLevel::error,
                  "metric '" + full_name + "' refused: already registered with another type",
                  {}});
    return nullptr;
  }
  for (MetricSlot& slot : state.metric_slots) {
    if (slot.record == &record)
      return &slot;
  }
  return &state.metric_slots.emplace_back(MetricSlot{&state, &record});
}

void metric_record(void* metric, double value) {
  auto* slot = static_cast<MetricSlot*>(metric);
  const std::lock_guard lock(slot->state->mutex);
  slot->record->values.push_back(value);
}

// ---- message level (Context) ----

void message_log(void* host_message, std::uint32_t level, warren_str text) {
  Delivery& d = delivery(host_message);
  d.state->log(to_log_level(level), std::string(from_abi(text)), d.message->message_id);
}

int message_header(void* host_message, warren_str name, warren_str* value) {
  const Delivery& d = delivery(host_message);
  const auto it = d.message->headers.find(std::string(from_abi(name)));
  if (it == d.message->headers.end())
    return 0;
  *value = to_abi(it->second);
  return 1;
}

int message_stop_requested(void* host_message) {
  return delivery(host_message).state->stop_requested.load() ? 1 : 0;
}

void* message_scope(void* host_message) {
  return delivery(host_message).scope;
}

void message_set_scope(void* host_message, void* scope, warren_scope_destroy_fn destroy) {
  Delivery& d = delivery(host_message);
  d.settle();  // a replaced scope dies at once, as it would in the host
  if (scope == nullptr || destroy == nullptr)
    return;
  d.scope = scope;
  d.destroy_scope = destroy;
  d.state->live_scopes.fetch_add(1);
}

int message_publish(void* host_message, const warren_publish_request* request, char* error,
                    std::size_t error_capacity) {
  Harness::State& state = *delivery(host_message).state;
  PublishedMessage message;
  message.exchange = from_abi(request->exchange);
  message.routing_key = from_abi(request->routing_key);
  message.body = from_abi(request->body);
  message.content_type = from_abi(request->content_type);
  message.message_id = from_abi(request->message_id);
  for (std::size_t i = 0; i < request->header_count; ++i) {
    message.headers.emplace_back(from_abi(request->header_names[i]),
                                 from_abi(request->header_values[i]));
  }
  const std::lock_guard lock(state.mutex);
  if (!state.publish_failures.empty()) {
    detail::copy_error(error, error_capacity, state.publish_failures.front().c_str());
    state.publish_failures.pop_front();
    return 1;
  }
  state.published.push_back(std::move(message));
  return 0;
}

void message_report(void* host_message, const warren_outcome* outcome) {
  Delivery& d = delivery(host_message);
  ++d.reports;
  d.kind = outcome->kind;
  d.delay_ms = outcome->delay_ms;
  d.reason = from_abi(outcome->reason);
  d.error_kind = outcome->error_kind;
  d.error_type = from_abi(outcome->error_type);
}

const warren_host_api& fake_host_api() {
  static const warren_host_api api = [] {
    warren_host_api table{};
    table.struct_size = sizeof(table);
    table.abi_major = WARREN_ABI_MAJOR;
    table.abi_minor = WARREN_ABI_MINOR;
    table.plugin_log = &plugin_log;
    table.plugin_setting = &plugin_setting;
    table.plugin_worker_name = &plugin_worker_name;
    table.plugin_metric = &plugin_metric;
    table.metric_record = &metric_record;
    table.message_log = &message_log;
    table.message_header = &message_header;
    table.message_stop_requested = &message_stop_requested;
    table.message_scope = &message_scope;
    table.message_set_scope = &message_set_scope;
    table.message_publish = &message_publish;
    table.message_report = &message_report;
    return table;
  }();
  return api;
}

std::string describe(const warren_plugin_descriptor& descriptor) {
  return std::string("plugin '") + (descriptor.name != nullptr ? descriptor.name : "?") + "'";
}

}  // namespace

// ---- Harness ----

Harness::Harness(const warren_plugin_descriptor& descriptor, Settings settings,
                 std::string worker_name)
    : state_(std::make_unique<State>()) {
  constexpr std::size_t required = offsetof(warren_plugin_descriptor, handle) + sizeof(void*);
  if (descriptor.struct_size < required) {
    throw std::runtime_error(describe(descriptor) + ": descriptor is " +
                             std::to_string(descriptor.struct_size) + " bytes, smaller than the " +
                             std::to_string(required) + " of ABI 1.0: it is not a Warren plugin");
  }
  if (descriptor.abi_major != WARREN_ABI_MAJOR || descriptor.abi_minor > WARREN_ABI_MINOR) {
    throw std::runtime_error(describe(descriptor) + " was built for Warren ABI " +
                             std::to_string(descriptor.abi_major) + "." +
                             std::to_string(descriptor.abi_minor) + "; this SDK speaks " +
                             std::to_string(WARREN_ABI_MAJOR) + "." +
                             std::to_string(WARREN_ABI_MINOR) + ": rebuild it against this SDK");
  }
  if (descriptor.create == nullptr || descriptor.destroy == nullptr ||
      descriptor.handle == nullptr) {
    throw std::runtime_error(describe(descriptor) + ": descriptor lacks create/destroy/handle");
  }
  std::memcpy(&state_->descriptor, &descriptor,
              std::min<std::size_t>(descriptor.struct_size, sizeof(warren_plugin_descriptor)));
  state_->settings = std::move(settings);
  state_->worker_name = std::move(worker_name);

  char error[1024] = {0};
  state_->instance =
      state_->descriptor.create(&fake_host_api(), state_.get(), error, sizeof(error));
  if (state_->instance == nullptr) {
    throw std::runtime_error(describe(state_->descriptor) + " failed to start worker '" +
                             state_->worker_name + "': " + error);
  }
}

Harness::~Harness() {
  if (state_ && state_->instance != nullptr)
    state_->descriptor.destroy(state_->instance);
}

Harness::Harness(Harness&&) noexcept = default;

Harness& Harness::operator=(Harness&& other) noexcept {
  if (this != &other) {
    if (state_ && state_->instance != nullptr)
      state_->descriptor.destroy(state_->instance);
    state_ = std::move(other.state_);
  }
  return *this;
}

Result Harness::deliver(const TestMessage& message) {
  if (!state_)
    throw std::logic_error("Harness::deliver called on a moved-from Harness");
  warren_message abi_message{};
  abi_message.struct_size = sizeof(abi_message);
  abi_message.body = to_abi(message.body);
  abi_message.routing_key = to_abi(message.routing_key);
  abi_message.exchange = to_abi(message.exchange);
  abi_message.message_id = to_abi(message.message_id);
  abi_message.content_type = to_abi(message.content_type);
  abi_message.attempt = message.attempt;
  abi_message.redelivered = message.redelivered ? 1 : 0;

  Delivery d(state_.get(), &message);
  state_->descriptor.handle(state_->instance, &abi_message, &d);
  d.settle();
  return d.to_result();
}

std::vector<PublishedMessage> Harness::published() const {
  const std::lock_guard lock(state_->mutex);
  return state_->published;
}

std::vector<LogRecord> Harness::logs() const {
  const std::lock_guard lock(state_->mutex);
  return state_->logs;
}

std::map<std::string, MetricRecord> Harness::metrics() const {
  const std::lock_guard lock(state_->mutex);
  return state_->metrics;
}

void Harness::fail_next_publish(std::string reason) {
  const std::lock_guard lock(state_->mutex);
  state_->publish_failures.push_back(std::move(reason));
}

void Harness::request_stop() noexcept {
  state_->stop_requested.store(true);
}

std::size_t Harness::live_scopes() const noexcept {
  return state_->live_scopes.load();
}

const warren_plugin_descriptor& Harness::descriptor() const noexcept {
  return state_->descriptor;
}

// ---- values and printing ----

double MetricRecord::sum() const noexcept {
  double total = 0;
  for (double value : values)
    total += value;
  return total;
}

double MetricRecord::last() const noexcept {
  return values.empty() ? 0.0 : values.back();
}

std::string_view to_string(Result::Kind kind) noexcept {
  switch (kind) {
    case Result::Kind::ack:
      return "ack";
    case Result::Kind::retry:
      return "retry";
    case Result::Kind::dead_letter:
      return "dead_letter";
  }
  return "invalid";
}

std::string_view to_string(Result::Error error) noexcept {
  switch (error) {
    case Result::Error::none:
      return "none";
    case Result::Error::std_exception:
      return "std_exception";
    case Result::Error::permanent:
      return "permanent";
    case Result::Error::unknown:
      return "unknown";
  }
  return "invalid";
}

std::ostream& operator<<(std::ostream& out, Result::Kind kind) {
  return out << to_string(kind);
}

std::ostream& operator<<(std::ostream& out, const Result& result) {
  out << result.kind;
  if (result.delay)
    out << " after " << result.delay->count() << " ms";
  if (result.threw) {
    out << " (threw "
        << (result.exception_type.empty() ? "a non-std exception" : result.exception_type) << ": "
        << result.reason << ")";
  } else if (!result.reason.empty()) {
    out << ": " << result.reason;
  }
  return out;
}

std::ostream& operator<<(std::ostream& out, LogLevel level) {
  switch (level) {
    case LogLevel::info:
      return out << "info";
    case LogLevel::warn:
      return out << "warn";
    case LogLevel::error:
      return out << "error";
  }
  return out << "invalid";
}

}  // namespace warren::testing
