// In-memory stand-ins for the runtime's side of the plugin ABI (host_abi::WorkerServices and
// MessageServices): a worker and a message that record everything a plugin asks of them, so
// tests can assert on it. The message keeps the plugin's scope in the real host_abi::MessageScope,
// so what a test sees of scopes is the adapter's behaviour, not the fake's. Single-threaded.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "warren/abi.h"
#include "warren/host_abi/labelled_metric.h"
#include "warren/host_abi/message_scope.h"
#include "warren/host_abi/services.h"

namespace warren::plugin::testing {

struct LogLine {
  LogLevel level;
  std::string text;
};

class FakeMetric final : public host_abi::PluginMetric {
 public:
  FakeMetric(MetricType metric_type, std::string metric_name, std::string metric_help,
             std::vector<double> metric_buckets)
      : PluginMetric(metric_type),
        name(std::move(metric_name)),
        help(std::move(metric_help)),
        buckets(std::move(metric_buckets)) {}

  std::string name;
  std::string help;
  std::vector<double> buckets;
  std::vector<double> recorded;

 private:
  void apply(double value) noexcept override { recorded.push_back(value); }
};

// Its series are FakeMetrics named after their values ("pt-BR,gold").
class FakeLabelledMetric final : public host_abi::LabelledMetric {
 public:
  static constexpr std::size_t kSeriesLimit = 3;

  FakeLabelledMetric(MetricType metric_type, std::string metric_name, std::string metric_help,
                     std::vector<double> metric_buckets, std::vector<std::string> names,
                     std::function<void(const std::string&)> warn)
      : LabelledMetric(metric_type, metric_name, names, kSeriesLimit, std::move(warn)),
        name(std::move(metric_name)),
        help(std::move(metric_help)),
        buckets(std::move(metric_buckets)) {}

  // The series of these values, joined by ','; nullptr when none was made.
  const FakeMetric* find_series(std::string_view values) const {
    for (const FakeMetric* made : made_series) {
      if (made->name == values)
        return made;
    }
    return nullptr;
  }

  std::string name;
  std::string help;
  std::vector<double> buckets;
  std::vector<const FakeMetric*> made_series;

 private:
  std::unique_ptr<host_abi::PluginMetric> make_series(
      const std::vector<std::string>& values) override {
    std::string joined;
    for (const auto& value : values)
      joined += (joined.empty() ? "" : ",") + value;
    auto made = std::make_unique<FakeMetric>(type(), joined, help, buckets);
    made_series.push_back(made.get());
    return made;
  }
};

class FakeWorkerServices final : public host_abi::WorkerServices {
 public:
  std::string_view worker_name() const noexcept override { return name; }
  void log(LogLevel level, std::string_view text) noexcept override {
    logs.push_back({level, std::string(text)});
  }
  const std::string* setting(std::string_view key) const noexcept override {
    const auto found = settings.find(key);
    return found == settings.end() ? nullptr : &found->second;
  }
  host_abi::PluginMetric* metric(MetricType type, const std::string& exported_name,
                                 std::string_view help, std::span<const double> buckets,
                                 std::string& refusal) noexcept override {
    if (refuse_metrics_with) {
      refusal = *refuse_metrics_with;
      return nullptr;
    }
    metrics.push_back(std::make_unique<FakeMetric>(type, exported_name, std::string(help),
                                                   std::vector(buckets.begin(), buckets.end())));
    return metrics.back().get();
  }

  // A labelled metric: FakeLabelledMetric with the shared series rules, a bound of 3 series.
  host_abi::PluginMetric* labelled_metric(MetricType type, const std::string& exported_name,
                                          std::string_view help, std::span<const double> buckets,
                                          std::span<const std::string> label_names,
                                          std::string& refusal) noexcept override {
    if (refuse_metrics_with) {
      refusal = *refuse_metrics_with;
      return nullptr;
    }
    labelled_metrics.push_back(std::make_unique<FakeLabelledMetric>(
        type, exported_name, std::string(help), std::vector(buckets.begin(), buckets.end()),
        std::vector<std::string>(label_names.begin(), label_names.end()),
        [this](const std::string& text) { log(LogLevel::warn, text); }));
    return labelled_metrics.back().get();
  }
  bool log_enabled(LogLevel level) const noexcept override { return level >= least_level; }

  const FakeMetric* find_metric(std::string_view exported_name) const {
    for (const auto& metric : metrics) {
      if (metric->name == exported_name)
        return metric.get();
    }
    return nullptr;
  }

  std::string name = "orders-worker";
  std::map<std::string, std::string, std::less<>> settings;
  std::vector<LogLine> logs;
  std::vector<std::unique_ptr<FakeMetric>> metrics;
  std::vector<std::unique_ptr<FakeLabelledMetric>> labelled_metrics;
  // The worker's [log] level.
  LogLevel least_level = LogLevel::trace;
  // Set: the registry refuses every metric with this reason.
  std::optional<std::string> refuse_metrics_with;
};

class FakeMessageServices final : public host_abi::MessageServices {
 public:
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
  void* scope() const noexcept override { return scope_slot.get(); }
  void set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept override {
    ++set_scope_calls;
    scope_slot.set(scope, destroy);
  }
  std::optional<std::string> publish(OutgoingMessage message) noexcept override {
    published.push_back(std::move(message));
    return publish_failure;
  }
  void report(host_abi::ReportedOutcome outcome) noexcept override {
    reports.push_back(std::move(outcome));
  }

  std::vector<LogLine> logs;
  std::map<std::string, std::string, std::less<>> headers;
  bool stop = false;
  // The adapter's scope rules; destroyed (settling the message) with this object.
  host_abi::MessageScope scope_slot;
  int set_scope_calls = 0;
  std::optional<std::string> publish_failure;
  std::vector<OutgoingMessage> published;
  std::vector<host_abi::ReportedOutcome> reports;
};

}  // namespace warren::plugin::testing
