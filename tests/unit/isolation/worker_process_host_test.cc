// WorkerProcess, the host's handle on a child: the scripted plugin's outcomes, logs, metrics and
// publishes reach the host's services; a crash, a hard timeout and a failing init come back
// named; a soft timeout reaches the handler as stop_requested().
#include "children_die_of_signals.h"
#include "isolation/worker_process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

namespace warren::isolation {
namespace {

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

const HeldExecutable& worker_binary() {
  static const bool prepared = (let_children_die_of_signals(), true);
  (void)prepared;
  static HeldExecutable executable(WARREN_WORKER_PATH);
  return executable;
}

WorkerProcessOptions options(std::map<std::string, std::string> settings = {}) {
  WorkerProcessOptions options;
  options.worker = "orders";
  options.plugin_path = WARREN_SCRIPTED_PLUGIN_PATH;
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

Message with_action(const std::string& action) {
  Message message;
  message.headers = {{"x-test-action", action}};
  return message;
}

std::optional<WorkerDeath> run(WorkerProcess& process, const Message& message,
                               FakeMessage& services) {
  return process.handle(message.view(), message.headers, services);
}

TEST(WorkerProcessHost, OutcomesPublishesAndMetricsReachTheHostsServices) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options(), worker);
  process.start();
  FakeMessage acked, retried, published;
  EXPECT_EQ(run(process, with_action("ack"), acked), std::nullopt);
  ASSERT_EQ(acked.outcomes.size(), 1u);
  EXPECT_EQ(acked.outcomes[0].kind, host_abi::ReportedOutcome::Kind::ack);
  EXPECT_EQ(run(process, with_action("retry:100"), retried), std::nullopt);
  ASSERT_EQ(retried.outcomes.size(), 1u);
  EXPECT_EQ(retried.outcomes[0].delay, 100ms);
  EXPECT_EQ(run(process, with_action("publish:audit:seen"), published), std::nullopt);
  ASSERT_EQ(published.published.size(), 1u);
  EXPECT_EQ(published.published[0].exchange, "audit");
  ASSERT_EQ(published.outcomes.size(), 1u);
  EXPECT_EQ(published.outcomes[0].kind, host_abi::ReportedOutcome::Kind::ack);
  // The scripted plugin declares scripted_actions_total{action} in init and counts each call.
  // (exported under the name metric_rules.h gives it: the plugin's name ends it)
  auto declared = std::find_if(worker.metrics.begin(), worker.metrics.end(), [](const auto& entry) {
    return entry.first.ends_with("scripted_actions_total");
  });
  ASSERT_NE(declared, worker.metrics.end());
  auto& by_action = declared->second->by_values;
  ASSERT_TRUE(by_action.contains({"ack"}));
  EXPECT_EQ(by_action[{"ack"}]->total, 1);
  process.stop(std::chrono::steady_clock::now() + 10s);
  EXPECT_FALSE(process.running());
}

TEST(WorkerProcessHost, ACrashIsNamedAndTheNextMessageGetsAFreshChild) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options(), worker);
  process.start();
  pid_t first = process.pid();
  FakeMessage crashed, after;
  auto death = run(process, with_action("segfault"), crashed);
  ASSERT_TRUE(death);
  EXPECT_EQ(death->reason, "SIGSEGV");
  EXPECT_TRUE(crashed.outcomes.empty());
  EXPECT_FALSE(process.running());
  EXPECT_EQ(run(process, with_action("ack"), after), std::nullopt);
  EXPECT_NE(process.pid(), first);
  ASSERT_EQ(after.outcomes.size(), 1u);
}

TEST(WorkerProcessHost, AHardTimeoutKillsTheChild) {
  FakeWorker worker;
  WorkerProcessOptions timed = options();
  timed.hard_timeout = 300ms;
  WorkerProcess process(worker_binary(), timed, worker);
  process.start();
  FakeMessage slow;
  auto death = run(process, with_action("sleep:30000"), slow);
  ASSERT_TRUE(death);
  EXPECT_EQ(death->reason, "timeout");
  EXPECT_FALSE(process.running());
}

TEST(WorkerProcessHost, AStoppedChildIsWedged) {
  FakeWorker worker;
  WorkerProcessOptions watched = options();
  watched.ping_interval = 50ms;
  watched.wedged_after = 300ms;
  WorkerProcess process(worker_binary(), watched, worker);
  process.start();
  ::kill(process.pid(), SIGSTOP);  // not even its reader thread answers now
  FakeMessage stuck;
  auto death = run(process, with_action("ack"), stuck);
  ASSERT_TRUE(death);
  EXPECT_EQ(death->reason, "wedged");
}

TEST(WorkerProcessHost, AFailingInitIsAStartErrorWithItsReason) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options({{"sleep_ms", "soon"}}), worker);
  try {
    process.start();
    FAIL() << "started";
  } catch (const WorkerStartError& error) {
    EXPECT_NE(std::string(error.what()).find("init: "), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("sleep_ms"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(process.running());
}

}  // namespace
}  // namespace warren::isolation
