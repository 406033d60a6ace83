// In-memory stand-ins for the runtime's side of the plugin ABI: a worker and a message that
// record everything a plugin asks of them, so tests can assert on it. Single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plugin/host_services.h"
#include "warren/abi.h"

namespace warren::plugin::testing {

struct LogLine {
  LogLevel level;
  std::string text;
};

class FakeMetric final : public PluginMetric {
 public:
  FakeMetric(warren_metric_type metric_type, std::string metric_name, std::string metric_help,
             std::vector<double> metric_buckets)
      : type(metric_type),
        name(std::move(metric_name)),
        help(std::move(metric_help)),
        buckets(std::move(metric_buckets)) {}
  void record(double value) noexcept override { recorded.push_back(value); }

  warren_metric_type type;
  std::string name;
  std::string help;
  std::vector<double> buckets;
  std::vector<double> recorded;
};

class FakeWorkerServices final : public WorkerServices {
 public:
  std::string_view worker_name() const noexcept override { return name; }
  void log(LogLevel level, std::string_view text) noexcept override {
    logs.push_back({level, std::string(text)});
  }
  const std::string* setting(std::string_view key) const noexcept override {
    const auto found = settings.find(key);
    return found == settings.end() ? nullptr : &found->second;
  }
  PluginMetric* metric(warren_metric_type type, std::string_view metric_name, std::string_view help,
                       std::span<const double> buckets) noexcept override {
    metrics.push_back(std::make_unique<FakeMetric>(type, std::string(metric_name),
                                                   std::string(help),
                                                   std::vector(buckets.begin(), buckets.end())));
    return metrics.back().get();
  }

  const FakeMetric* find_metric(std::string_view metric_name) const {
    for (const auto& metric : metrics) {
      if (metric->name == metric_name)
        return metric.get();
    }
    return nullptr;
  }

  std::string name = "orders-worker";
  std::map<std::string, std::string, std::less<>> settings;
  std::vector<LogLine> logs;
  std::vector<std::unique_ptr<FakeMetric>> metrics;
};

// A copy of what the plugin asked to publish.
struct PublishedMessage {
  std::string exchange;
  std::string routing_key;
  std::string body;
  std::string content_type;
  std::string message_id;
  std::vector<std::pair<std::string, std::string>> headers;
};

// A copy of what the plugin reported.
struct ReportedOutcome {
  std::uint32_t kind = 0;
  std::int64_t delay_ms = 0;
  std::string reason;
  std::uint32_t error_kind = 0;
  std::string error_type;
};

class FakeMessageServices final : public MessageServices {
 public:
  FakeMessageServices() = default;
  FakeMessageServices(const FakeMessageServices&) = delete;
  FakeMessageServices& operator=(const FakeMessageServices&) = delete;
  // Settles the message if the test did not: call settle() while the plugin is still loaded.
  ~FakeMessageServices() override { settle(); }

  void log(LogLevel level, std::string_view text) noexcept override {
    logs.push_back({level, std::string(text)});
  }
  std::optional<std::string_view> header(std::string_view name) const noexcept override {
    const auto found = headers.find(name);
    if (found == headers.end())
      return std::nullopt;
    return std::string_view(found->second);
  }
  bool stop_requested() const noexcept override { return stop; }
  void* scope() const noexcept override { return scope_object; }
  void set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept override {
    ++set_scope_calls;
    scope_object = scope;
    scope_destroy = destroy;
  }
  std::optional<std::string> publish(const warren_publish_request& request) noexcept override {
    PublishedMessage copy{text(request.exchange),     text(request.routing_key), text(request.body),
                          text(request.content_type), text(request.message_id),  {}};
    for (size_t i = 0; i < request.header_count; ++i) {
      copy.headers.emplace_back(text(request.header_names[i]), text(request.header_values[i]));
    }
    saw_null_string_data = saw_null_string_data || request.exchange.data == nullptr ||
                           request.routing_key.data == nullptr || request.body.data == nullptr ||
                           request.content_type.data == nullptr ||
                           request.message_id.data == nullptr;
    published.push_back(std::move(copy));
    return publish_failure;
  }
  void report(const warren_outcome& outcome) noexcept override {
    reports.push_back({outcome.kind, outcome.delay_ms, text(outcome.reason), outcome.error_kind,
                       text(outcome.error_type)});
  }

  // What the host does when the message is settled: destroy the plugin's scope object.
  void settle() noexcept {
    if (scope_destroy != nullptr)
      scope_destroy(scope_object);
    scope_destroy = nullptr;
    scope_object = nullptr;
  }

  std::vector<LogLine> logs;
  std::map<std::string, std::string, std::less<>> headers;
  bool stop = false;
  void* scope_object = nullptr;
  warren_scope_destroy_fn scope_destroy = nullptr;
  int set_scope_calls = 0;
  std::optional<std::string> publish_failure;
  bool saw_null_string_data = false;
  std::vector<PublishedMessage> published;
  std::vector<ReportedOutcome> reports;

 private:
  static std::string text(warren_str value) {
    return value.data == nullptr ? std::string() : std::string(value.data, value.size);
  }
};

}  // namespace warren::plugin::testing
