// WorkerProcess's tests' host side, in memory: the worker's and a message's services recording
// what the child asked of them, the options that run the scripted test plugin in the real
// warren-worker, and a message carrying an x-test-action.
#pragma once

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "children_die_of_signals.h"
#include "isolation/worker_process.h"
#include "plugin/held_plugin_file.h"

namespace warren::isolation::test_host {

using namespace std::chrono_literals;

class CountingMetric final : public host_abi::PluginMetric {
 public:
  CountingMetric(MetricType type, std::size_t labels = 0) : PluginMetric(type), labels_(labels) {}
  double total = 0;
  std::map<std::vector<std::string>, std::unique_ptr<CountingMetric>> by_values;

  std::size_t label_count() const noexcept override { return labels_; }
  host_abi::PluginMetric* series(std::span<const std::string_view> values) noexcept override {
    auto& series = by_values[std::vector<std::string>(values.begin(), values.end())];
    if (!series)
      series = std::make_unique<CountingMetric>(type());
    return series.get();
  }

 private:
  void apply(double value) noexcept override { total += value; }
  std::size_t labels_;
};

// The host's worker services, in memory.
class FakeWorker final : public host_abi::WorkerServices {
 public:
  std::string_view worker_name() const noexcept override { return "orders"; }
  void log(LogLevel, std::string_view text) noexcept override { lines.emplace_back(text); }
  const std::string* setting(std::string_view) const noexcept override { return nullptr; }
  host_abi::PluginMetric* metric(MetricType type, const std::string& name, std::string_view,
                                 std::span<const double>, std::string&) noexcept override {
    auto& metric = metrics[name];
    if (!metric)
      metric = std::make_unique<CountingMetric>(type);
    return metric.get();
  }
  host_abi::PluginMetric* labelled_metric(MetricType type, const std::string& name,
                                          std::string_view, std::span<const double>,
                                          std::span<const std::string> labels,
                                          std::string&) noexcept override {
    auto& metric = metrics[name];
    if (!metric)
      metric = std::make_unique<CountingMetric>(type, labels.size());
    return metric.get();
  }

  std::vector<std::string> lines;
  std::map<std::string, std::unique_ptr<CountingMetric>> metrics;
};

class FakeMessage final : public host_abi::MessageServices {
 public:
  void log(LogLevel, std::string_view text) noexcept override { lines.emplace_back(text); }
  std::optional<std::string_view> header(std::string_view) const noexcept override {
    return std::nullopt;
  }
  bool stop_requested() const noexcept override { return false; }
  void* scope() const noexcept override { return nullptr; }
  void set_scope(void*, warren_scope_destroy_fn) noexcept override {}
  std::optional<std::string> publish(OutgoingMessage message) noexcept override {
    published.push_back(std::move(message));
    return publish_error;
  }
  void report(host_abi::ReportedOutcome outcome) noexcept override { outcomes.push_back(outcome); }

  std::vector<std::string> lines;
  std::vector<OutgoingMessage> published;
  std::optional<std::string> publish_error;
  std::vector<host_abi::ReportedOutcome> outcomes;
};

inline const HeldExecutable& worker_binary() {
  static const bool prepared = (let_children_die_of_signals(), true);
  (void)prepared;
  static HeldExecutable executable(WARREN_WORKER_PATH);
  return executable;
}

// The scripted test plugin as a host holds it for its children (plugin/held_plugin_file.h).
inline const plugin::HeldPluginFile& scripted_plugin() {
  static const std::filesystem::path file = WARREN_SCRIPTED_PLUGIN_PATH;
  static const plugin::HeldPluginFile held(file.parent_path(), file);
  return held;
}

inline WorkerProcessOptions options(std::map<std::string, std::string> settings = {}) {
  WorkerProcessOptions options;
  options.worker = "orders";
  options.plugin_path = WARREN_SCRIPTED_PLUGIN_PATH;
  options.plugin_fd = scripted_plugin().fd();
  options.settings = std::move(settings);
  options.startup_timeout = 20s;
  return options;
}

struct Message {
  std::string body = "body";
  std::string id = "id-1";
  std::vector<std::pair<std::string, std::string>> headers;
  warren_message view() const {
    warren_message view{};
    view.struct_size = sizeof(view);
    view.body = {body.data(), body.size()};
    view.message_id = {id.data(), id.size()};
    view.attempt = 1;
    return view;
  }
};

inline Message with_action(const std::string& action) {
  Message message;
  message.headers = {{"x-test-action", action}};
  return message;
}

inline std::optional<WorkerDeath> run(WorkerProcess& process, const Message& message,
                                      FakeMessage& services) {
  return process.handle(message.view(), message.headers, services);
}

}  // namespace warren::isolation::test_host
