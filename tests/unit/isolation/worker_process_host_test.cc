// WorkerProcess, the host's handle on a child: the scripted plugin's outcomes, logs, metrics and
// publishes reach the host's services; a crash, a hard timeout and a failing init come back
// named; a soft timeout reaches the handler as stop_requested().
#include "isolation/worker_process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "worker_process_fakes.h"

namespace warren::isolation {
namespace {

using namespace std::chrono_literals;
using namespace warren::isolation::test_host;

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
