// The in-memory fake host behind warren::testing::Harness: the host's own ABI adapter
// (Warren::host_abi: its C table, checks and conversions) over in-memory services. State is the
// worker (settings, mutex-guarded records of logs, publishes and metrics, the configuration it
// routes by); a Delivery is one handle() call (headers, scope, reported outcome) and lives on
// deliver()'s stack. The host's config loader, in-process routing, retry decision and plugin
// loader do the rest (host_config.cc, retry_run.cc), so the harness cannot disagree with the
// host; with load_isolated(), its worker processes too (isolated_plugin.cc).
#include "warren/testing/harness.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>

#include "host_config.h"
#include "isolated_plugin.h"
#include "plugin/plugin_library.h"
#include "retry_run.h"
#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"
#include "warren/host_abi/descriptor_check.h"
#include "warren/host_abi/labelled_metric.h"
#include "warren/host_abi/message_scope.h"
#include "warren/host_abi/metric_rules.h"
#include "warren/host_abi/plugin_instance.h"
#include "warren/host_abi/services.h"

namespace warren::testing {
namespace {

// "plugin 'name'", reading the name only from a descriptor large enough to have one.
std::string describe(const warren_plugin_descriptor& descriptor) {
  if (descriptor.struct_size < detail::kDescriptorV1_0Size || descriptor.name == nullptr)
    return "plugin";
  return std::string("plugin '") + descriptor.name + "'";
}

// The plugin's name from its file's, lib<name>.so, as the host names plugins; throws
// plugin::PluginLoadError (a std::runtime_error) for any other file name.
std::string plugin_name_of(const std::filesystem::path& file) {
  const std::string file_name = file.filename().string();
  if (!file_name.starts_with("lib") || !file_name.ends_with(".so") || file_name.size() <= 6) {
    throw plugin::PluginLoadError(file,
                                  "refused: the host loads a plugin only as lib<name>.so; "
                                  "build it with warren_add_plugin(<name> ...)");
  }
  return file_name.substr(3, file_name.size() - 6);
}

}  // namespace

// A metric handle given to the plugin: records into its MetricRecord's (or series') values under
// the harness's mutex.
class HarnessMetric final : public host_abi::PluginMetric {
 public:
  HarnessMetric(MetricType type, std::mutex& mutex, std::vector<double>& values)
      : PluginMetric(type), mutex_(mutex), values_(values) {}

 private:
  void apply(double value) noexcept override {
    const std::lock_guard lock(mutex_);
    values_.push_back(value);
  }

  std::mutex& mutex_;
  std::vector<double>& values_;
};

// A labelled metric's handle: the shared bound and overflow rules, series in MetricRecord::series.
class HarnessLabelledMetric final : public host_abi::LabelledMetric {
 public:
  HarnessLabelledMetric(MetricType type, const std::string& exported_name, std::mutex& mutex,
                        MetricRecord& record, std::function<void(const std::string&)> warn)
      : LabelledMetric(type, exported_name, record.label_names, host_abi::kDefaultMetricSeriesLimit,
                       std::move(warn)),
        mutex_(mutex),
        record_(record) {}

 private:
  std::unique_ptr<host_abi::PluginMetric> make_series(
      const std::vector<std::string>& values) override {
    const std::lock_guard lock(mutex_);
    return std::make_unique<HarnessMetric>(type(), mutex_, record_.series[values].values);
  }

  std::mutex& mutex_;
  MetricRecord& record_;
};

struct Harness::State final : host_abi::WorkerServices {
  // First, so it is destroyed last: the descriptor and the instance live in it (load()).
  std::shared_ptr<const void> library;
  warren_plugin_descriptor descriptor{};
  Settings settings;
  std::string name;
  mutable std::mutex mutex;                  // guards the configuration and the records below
  std::shared_ptr<const HostConfig> config;  // use_config()
  std::vector<RoutedMessage> routed;
  std::vector<LogRecord> logs;
  std::map<std::string, MetricRecord> metrics;  // std::map: node addresses are stable
  std::map<std::string, std::unique_ptr<host_abi::PluginMetric>> metric_handles;
  std::deque<std::string> publish_failures;

  std::atomic<bool> stop_requested{false};
  std::atomic<std::size_t> live_scopes{0};

  // load_isolated(): the child's limits and max_crashes; what it loaded, for descriptor().
  IsolationOptions isolation;
  std::string plugin_name;
  std::string plugin_version;

  // Last, so the handler is destroyed while everything it may use in its destructor lives:
  // in this process (instance) or in a worker process that logs here until it ends (isolated).
  std::unique_ptr<host_abi::PluginInstance> instance;
  std::unique_ptr<IsolatedPlugin> isolated;

  void record_log(LogLevel level, std::string_view text, std::string message_id) noexcept {
    try {
      const std::lock_guard lock(mutex);
      logs.push_back(LogRecord{level, std::string(text), std::move(message_id)});
    } catch (...) {  // out of memory: the line is lost, as it could be in the host
    }
  }

  // The fake broker: fails the publish if a failure is queued, or (with a configuration) if the
  // host would not route it; else confirms and records it with the queues it reached.
  std::optional<std::string> publish(OutgoingMessage message) {
    const std::lock_guard lock(mutex);
    if (!publish_failures.empty()) {
      std::string reason = std::move(publish_failures.front());
      publish_failures.pop_front();
      return reason;
    }
    RoutedMessage record{std::move(message), {}};
    if (config) {
      std::variant<std::vector<std::string>, std::string> route = config->route(record.message);
      if (std::string* refusal = std::get_if<std::string>(&route))
        return std::move(*refusal);
      record.queues = std::move(std::get<std::vector<std::string>>(route));
    }
    routed.push_back(std::move(record));
    return std::nullopt;
  }

  bool is_labelled(const std::string& exported_name) const {
    return dynamic_cast<const HarnessLabelledMetric*>(metric_handles.at(exported_name).get()) !=
           nullptr;
  }

  // ---- host_abi::WorkerServices ----
  std::string_view worker_name() const noexcept override { return name; }
  void log(LogLevel level, std::string_view text) noexcept override { record_log(level, text, {}); }
  const std::string* setting(std::string_view key) const noexcept override {
    const auto it = settings.find(std::string(key));
    return it == settings.end() ? nullptr : &it->second;
  }
  host_abi::PluginMetric* metric(MetricType type, const std::string& exported_name,
                                 std::string_view help, std::span<const double> buckets,
                                 std::string& refusal) noexcept override {
    try {
      const std::lock_guard lock(mutex);
      auto [record, inserted] = metrics.try_emplace(exported_name);
      if (inserted) {
        record->second.type = type;
        record->second.help = std::string(help);
        record->second.buckets.assign(buckets.begin(), buckets.end());
        metric_handles[exported_name] =
            std::make_unique<HarnessMetric>(type, mutex, record->second.values);
      } else if (record->second.type != type) {
        refusal = host_abi::type_clash(exported_name, record->second.type, type);
        return nullptr;
      } else if (is_labelled(exported_name)) {
        refusal = host_abi::label_clash(exported_name, record->second.label_names, {});
        return nullptr;
      }
      return metric_handles.at(exported_name).get();
    } catch (...) {
      refusal = "out of memory";
      return nullptr;
    }
  }
  host_abi::PluginMetric* labelled_metric(MetricType type, const std::string& exported_name,
                                          std::string_view help, std::span<const double> buckets,
                                          std::span<const std::string> label_names,
                                          std::string& refusal) noexcept override {
    try {
      std::unique_lock lock(mutex);
      auto [record, inserted] = metrics.try_emplace(exported_name);
      MetricRecord& metric = record->second;
      if (inserted) {
        metric.type = type;
        metric.help = std::string(help);
        metric.buckets.assign(buckets.begin(), buckets.end());
        metric.label_names.assign(label_names.begin(), label_names.end());
        metric_handles[exported_name] = std::make_unique<HarnessLabelledMetric>(
            type, exported_name, mutex, metric,
            [this](const std::string& text) { record_log(LogLevel::warn, text, {}); });
      } else if (metric.type != type) {
        refusal = host_abi::type_clash(exported_name, metric.type, type);
        return nullptr;
      } else if (!is_labelled(exported_name) ||
                 !std::equal(label_names.begin(), label_names.end(), metric.label_names.begin(),
                             metric.label_names.end())) {
        refusal = host_abi::label_clash(exported_name, metric.label_names, label_names);
        return nullptr;
      }
      return metric_handles.at(exported_name).get();
    } catch (...) {
      refusal = "out of memory";
      return nullptr;
    }
  }
};

namespace {

// One handle() call: the `host_message` handed to the plugin.
class Delivery final : public host_abi::MessageServices {
 public:
  Delivery(Harness::State& state, const TestMessage& message) : state_(state), message_(message) {}
  ~Delivery() override { settle(); }

  // The message is settled: what it attached to its scope dies now.
  void settle() noexcept {
    if (!scope_.holds())
      return;
    scope_.settle();
    state_.live_scopes.fetch_sub(1);
  }

  // What the handler reported, as the host's retry decision reads it; valid once result() is.
  const host_abi::ReportedOutcome& outcome() const noexcept { return outcome_; }

  Result result() const {
    if (reports_ != 1) {
      throw std::logic_error("the plugin reported " + std::to_string(reports_) +
                             " outcomes for message '" + message_.message_id +
                             "' instead of exactly one: its handle trampoline is broken");
    }
    Result result;
    switch (outcome_.kind) {
      case host_abi::ReportedOutcome::Kind::ack:
        result.kind = Result::Kind::ack;
        break;
      case host_abi::ReportedOutcome::Kind::retry:
        result.kind = Result::Kind::retry;
        break;
      case host_abi::ReportedOutcome::Kind::dead_letter:
        result.kind = Result::Kind::dead_letter;
        break;
      case host_abi::ReportedOutcome::Kind::invalid:
        throw std::logic_error("the plugin reported an invalid outcome for message '" +
                               message_.message_id + "': " + outcome_.reason);
    }
    result.delay = outcome_.delay;
    result.reason = outcome_.reason;
    result.threw = outcome_.threw();
    result.error = outcome_.error;
    result.exception_type = outcome_.exception_type;
    return result;
  }

  // ---- host_abi::MessageServices ----
  void log(LogLevel level, std::string_view text) noexcept override {
    state_.record_log(level, text, message_.message_id);
  }
  std::optional<std::string_view> header(std::string_view name) const noexcept override {
    const auto it = message_.headers.find(std::string(name));
    if (it == message_.headers.end())
      return std::nullopt;
    return std::string_view(it->second);
  }
  bool stop_requested() const noexcept override { return state_.stop_requested.load(); }
  void* scope() const noexcept override { return scope_.get(); }
  void set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept override {
    const bool held = scope_.holds();
    scope_.set(scope, destroy);
    if (scope_.holds() && !held)
      state_.live_scopes.fetch_add(1);
    if (!scope_.holds() && held)
      state_.live_scopes.fetch_sub(1);
  }
  std::optional<std::string> publish(OutgoingMessage message) noexcept override {
    try {
      return state_.publish(std::move(message));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }
  void report(host_abi::ReportedOutcome outcome) noexcept override {
    ++reports_;
    outcome_ = std::move(outcome);
  }

 private:
  Harness::State& state_;
  const TestMessage& message_;
  host_abi::MessageScope scope_;
  int reports_ = 0;
  host_abi::ReportedOutcome outcome_;
};

}  // namespace

// ---- Harness ----

Harness::Harness(const warren_plugin_descriptor& descriptor, Settings settings,
                 std::string worker_name)
    : Harness(nullptr, descriptor, std::move(settings), std::move(worker_name)) {}

Harness Harness::load(const std::string& plugin_file, Settings settings, std::string worker_name) {
  // As the host loads lib<plugin>.so from its plugin directory: the same checks, and the name
  // in WARREN_PLUGIN(...) must be the one in the file's name.
  const std::filesystem::path file = std::filesystem::absolute(plugin_file);
  const std::string name = plugin_name_of(file);
  std::shared_ptr<plugin::PluginLibrary> library =
      plugin::PluginLibrary::load(file.parent_path(), name);
  const warren_plugin_descriptor& descriptor = library->descriptor();
  return Harness(std::move(library), descriptor, std::move(settings), std::move(worker_name));
}

Harness Harness::load_isolated(const std::string& plugin_file, Settings settings,
                               std::string worker_name, IsolationOptions options) {
  // As load(): the file must be named as the host names plugins (the child's loader checks the
  // rest), and a plugin that fails to start is refused here, not at the first message.
  plugin_name_of(std::filesystem::absolute(plugin_file));
  auto state = std::make_unique<State>();
  state->settings = std::move(settings);
  state->name = std::move(worker_name);
  state->isolation = options;
  try {
    state->isolated = std::make_unique<IsolatedPlugin>(plugin_file, state->name, state->settings,
                                                       options, *state);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("plugin " + plugin_file + " failed to start worker '" + state->name +
                             "' in a worker process: " + e.what());
  }
  state->plugin_name = state->isolated->plugin_name();
  state->plugin_version = state->isolated->plugin_version();
  state->descriptor.name = state->plugin_name.c_str();
  state->descriptor.version = state->plugin_version.c_str();
  return Harness(std::move(state));
}

Harness::Harness(std::unique_ptr<State> state) : state_(std::move(state)) {}

Harness::Harness(std::shared_ptr<const void> library, const warren_plugin_descriptor& descriptor,
                 Settings settings, std::string worker_name)
    : state_(std::make_unique<State>()) {
  state_->library = std::move(library);
  if (const std::optional<std::string> refusal = host_abi::descriptor_refusal(descriptor)) {
    throw std::runtime_error(describe(descriptor) + " refused: " + *refusal);
  }
  state_->descriptor = host_abi::copy_descriptor(descriptor);
  state_->settings = std::move(settings);
  state_->name = std::move(worker_name);
  try {
    state_->instance = std::make_unique<host_abi::PluginInstance>(state_->descriptor, *state_);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(describe(state_->descriptor) + " failed to start worker '" +
                             state_->name + "': " + e.what());
  }
}

Harness::~Harness() = default;
Harness::Harness(Harness&&) noexcept = default;
Harness& Harness::operator=(Harness&&) noexcept = default;

Result Harness::deliver(const TestMessage& message) {
  return deliver_reporting(message).first;
}

std::pair<Result, host_abi::ReportedOutcome> Harness::deliver_reporting(
    const TestMessage& message) {
  State* state = state_.get();
  if (state == nullptr)
    throw std::logic_error("Harness::deliver called on a moved-from Harness");
  warren_message abi_message{};
  abi_message.struct_size = sizeof(abi_message);
  abi_message.body = detail::to_abi(message.body);
  abi_message.routing_key = detail::to_abi(message.routing_key);
  abi_message.exchange = detail::to_abi(message.exchange);
  abi_message.message_id = detail::to_abi(message.message_id);
  abi_message.content_type = detail::to_abi(message.content_type);
  abi_message.attempt = message.attempt;
  abi_message.redelivered = message.redelivered ? 1 : 0;

  Delivery delivery(*state, message);
  if (state->isolated) {
    if (std::optional<std::string> death =
            state->isolated->run(abi_message, message.headers, delivery)) {
      // No outcome: the host runs the message again in a fresh process (dead-lettering it at
      // max_crashes), in the words of its log.
      Result crashed;
      crashed.kind = Result::Kind::retry;
      crashed.crash = std::move(*death);
      crashed.reason = "its worker process died (" + crashed.crash + ") running this message";
      return {std::move(crashed), host_abi::ReportedOutcome{}};
    }
  } else {
    state->instance->handle(abi_message, delivery);
  }
  delivery.settle();
  Result result = delivery.result();
  return {std::move(result), delivery.outcome()};
}

void Harness::use_config(const std::string& config_file) {
  auto config = std::make_shared<const HostConfig>(HostConfig::load(config_file));
  const std::lock_guard lock(state_->mutex);
  state_->config = std::move(config);
}

void Harness::use_config_text(std::string_view toml, const std::string& source_name) {
  auto config = std::make_shared<const HostConfig>(HostConfig::parse(toml, source_name));
  const std::lock_guard lock(state_->mutex);
  state_->config = std::move(config);
}

RetryPolicy Harness::retry_policy() const {
  std::shared_ptr<const HostConfig> config;
  {
    const std::lock_guard lock(state_->mutex);
    config = state_->config;
  }
  if (!config) {
    throw std::logic_error(
        "Harness::retry_policy: no configuration; call use_config() first or "
        "give deliver_until_settled() a RetryPolicy");
  }
  return config->retry_policy(state_->name);
}

SettledMessage Harness::deliver_until_settled(const TestMessage& first,
                                              std::uint32_t max_deliveries) {
  return deliver_until_settled(first, retry_policy(), max_deliveries);
}

SettledMessage Harness::deliver_until_settled(const TestMessage& first, const RetryPolicy& policy,
                                              std::uint32_t max_deliveries) {
  RetryRun run(policy, state_->name, first);
  const int max_crashes = state_->isolated ? this->max_crashes() : 0;
  for (;;) {
    auto [result, outcome] = deliver_reporting(run.message());
    const bool settled =
        result.crash.empty()
            ? run.settle(std::move(result), outcome, state_->stop_requested.load(), max_deliveries)
            : run.crashed(std::move(result), max_crashes, max_deliveries);
    if (settled)
      return run.take();
  }
}

int Harness::max_crashes() const {
  std::shared_ptr<const HostConfig> config;
  {
    const std::lock_guard lock(state_->mutex);
    config = state_->config;
  }
  if (config) {
    if (const std::optional<int> configured = config->max_crashes(state_->name))
      return *configured;
  }
  return state_->isolation.max_crashes;
}

std::vector<PublishedMessage> Harness::published() const {
  const std::lock_guard lock(state_->mutex);
  std::vector<PublishedMessage> messages;
  messages.reserve(state_->routed.size());
  for (const RoutedMessage& routed : state_->routed)
    messages.push_back(routed.message);
  return messages;
}

std::vector<RoutedMessage> Harness::routed() const {
  const std::lock_guard lock(state_->mutex);
  return state_->routed;
}

std::vector<PublishedMessage> Harness::published_to(std::string_view queue) const {
  const std::lock_guard lock(state_->mutex);
  std::vector<PublishedMessage> messages;
  for (const RoutedMessage& routed : state_->routed) {
    if (std::find(routed.queues.begin(), routed.queues.end(), queue) != routed.queues.end())
      messages.push_back(routed.message);
  }
  return messages;
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

namespace {

double sum_of(const std::vector<double>& values) noexcept {
  double total = 0;
  for (double value : values)
    total += value;
  return total;
}

double last_of(const std::vector<double>& values) noexcept {
  return values.empty() ? 0.0 : values.back();
}

}  // namespace

double MetricRecord::sum() const noexcept {
  return sum_of(values);
}
double MetricRecord::last() const noexcept {
  return last_of(values);
}
double SeriesRecord::sum() const noexcept {
  return sum_of(values);
}
double SeriesRecord::last() const noexcept {
  return last_of(values);
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

std::string_view to_string(SettledMessage::Disposition disposition) noexcept {
  switch (disposition) {
    case SettledMessage::Disposition::acked:
      return "acked";
    case SettledMessage::Disposition::dead_lettered:
      return "dead_lettered";
    case SettledMessage::Disposition::retrying:
      return "retrying";
  }
  return "invalid";
}

std::ostream& operator<<(std::ostream& out, SettledMessage::Disposition disposition) {
  return out << to_string(disposition);
}

std::ostream& operator<<(std::ostream& out, const SettledMessage& settled) {
  for (const SettledMessage::Attempt& attempt : settled.attempts) {
    out << "attempt " << attempt.number << ": " << attempt.result;
    if (attempt.run_again_now && !attempt.result.crash.empty())
      out << ", run again in a fresh worker process";
    else if (attempt.run_again_now)
      out << ", run again at once";
    else if (attempt.delay)
      out << ", next in " << attempt.delay->count() << " ms";
    out << "\n";
  }
  out << settled.disposition;
  if (!settled.reason.empty())
    out << ": " << settled.reason;
  if (settled.disposition == SettledMessage::Disposition::retrying)
    out << " (attempt " << settled.next_attempt << " in " << settled.next_delay.count() << " ms)";
  return out;
}

std::ostream& operator<<(std::ostream& out, Result::Kind kind) {
  return out << to_string(kind);
}

std::ostream& operator<<(std::ostream& out, const Result& result) {
  if (!result.crash.empty())
    return out << "crashed: " << result.crash;
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

}  // namespace warren::testing

namespace warren {

std::ostream& operator<<(std::ostream& out, LogLevel level) {
  return out << to_string(level);
}

std::ostream& operator<<(std::ostream& out, MetricType type) {
  return out << to_string(type);
}

}  // namespace warren
