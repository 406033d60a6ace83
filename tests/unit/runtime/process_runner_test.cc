// ProcessRunner (runtime/process_runner.h) with real warren-worker children running the scripted
// test plugin, under a real dispatcher (a window of prefetch / processes per child): a poison
// in a full window is the only message blamed, the host survives a thousand child crashes in a row
// with no growth of its file descriptors or memory, a child killed between messages blames none,
// and a plugin whose init crashes ends in a crash loop that gives every message back.
#include "runtime/process_runner.h"

#include <signal.h>
#include <sys/types.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "../isolation/children_die_of_signals.h"
#include "eventually.h"
#include "fake_delivery.h"
#include "isolation/worker_spawn.h"
#include "observability/metrics.h"
#include "plugin/held_plugin_file.h"
#include "runtime/dispatcher.h"

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;
using testing_support::FakeDelivery;
using testing_support::SettlementLog;

std::size_t open_descriptors() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++count;
  return count;
}

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:"))
      return std::stol(line.substr(6));
  }
  return -1;
}

std::unique_ptr<FakeDelivery> with_action(const std::string& id, const std::string& action,
                                          SettlementLog& log) {
  auto delivery = FakeDelivery::make(id, log);
  transport::InboundMessage message = delivery->message();
  message.headers.emplace_back("x-test-action", action);
  return std::make_unique<FakeDelivery>(std::move(message), log);
}

class ProcessRunnerTest : public ::testing::Test {
 protected:
  ProcessRunnerTest()
      : executable_((isolation::let_children_die_of_signals(), WARREN_WORKER_PATH)) {}

  // A runner of worker "w" with `processes` children, restarting them at once (no delay).
  // `on_crash_loop`: the runner's hook, set before its threads start.
  std::unique_ptr<Dispatcher> start(int processes, int max_crashes,
                                    std::map<std::string, std::string> settings = {},
                                    std::function<void(const std::string&)> on_crash_loop = {}) {
    ProcessRunnerOptions options;
    options.worker = "w";
    options.process.worker = "w";
    options.process.plugin_path = WARREN_SCRIPTED_PLUGIN_PATH;
    options.process.plugin_fd = plugin_.fd();
    options.process.settings = std::move(settings);
    options.process.startup_timeout = 20s;
    options.restarts.first = 0ms;
    options.restarts.max = 0ms;
    runner_ = std::make_unique<ProcessRunner>(executable_, options, worker_, metrics_);
    if (on_crash_loop)
      runner_->set_on_crash_loop(std::move(on_crash_loop));
    DispatcherOptions dispatch;
    dispatch.worker = "w";
    dispatch.queue = "q";
    dispatch.concurrency = processes;
    dispatch.max_crashes = max_crashes;
    auto dispatcher = std::make_unique<Dispatcher>(dispatch, *runner_, worker_, nullptr,
                                                   metrics_.worker("w", "q"), nullptr);
    dispatcher->set_crash_hooks({nullptr, 0, &metrics_.dead_lettered("w", "crash")});
    dispatcher->start();
    return dispatcher;
  }

  double crashes(const std::string& reason) { return metrics_.plugin_crashes("w", reason).Value(); }

  isolation::HeldExecutable executable_;
  const std::filesystem::path plugin_file_ = WARREN_SCRIPTED_PLUGIN_PATH;
  plugin::HeldPluginFile plugin_{plugin_file_.parent_path(), plugin_file_};
  observability::Metrics metrics_;
  WorkerContext worker_{"w", "scripted", {}, metrics_};
  std::unique_ptr<ProcessRunner> runner_;
  SettlementLog log_;
};

// About 40 ms a crash here (spawn, load the plugin, die); sanitizer builds are twenty times
// slower (TSan: 150 s for 200), so they count fewer.
// Their allocators also hold freed memory back (ASan's quarantine grew the resident size by 6 MiB
// over 40 crashes), so only the descriptors are counted there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCrashes = 40;
constexpr bool kCountMemory = false;
#else
constexpr int kCrashes = 1000;
constexpr bool kCountMemory = true;
#endif

TEST_F(ProcessRunnerTest, AThousandChildCrashesInARow_NoGrowthOfDescriptorsOrMemory) {
  auto dispatcher = start(1, 20 + kCrashes + 10);
  // Warm up: the first crashes allocate what stays (metric series, the crash count's entry).
  dispatcher->deliver(with_action("warm-up", "segfault", log_));
  ASSERT_TRUE(test_support::eventually([&] { return crashes("SIGSEGV") >= 20; }, 60s));
  const std::size_t descriptors = open_descriptors();
  const long resident = resident_kib();
  ASSERT_TRUE(test_support::eventually([&] { return crashes("SIGSEGV") >= 20 + kCrashes; }, 300s));
  // Sampled while the lane restarts children, a count may include one spawn's passing
  // descriptors (its socket pair, its pidfd): a leak of even one a crash never gets back down.
  std::size_t now = 0;
  EXPECT_TRUE(
      test_support::eventually([&] { return (now = open_descriptors()) <= descriptors; }, 10s))
      << now << " descriptors after " << kCrashes << " crashes, " << descriptors << " before";
  if (kCountMemory) {
    EXPECT_LT(resident_kib() - resident, 4 * 1024) << "KiB of memory grown over the crashes";
  }
  EXPECT_TRUE(test_support::eventually(
      [&] { return metrics_.plugin_restarts("w").Value() == crashes("SIGSEGV"); }, 10s))
      << "a restart for each crash";
  dispatcher->request_stop();
  EXPECT_TRUE(dispatcher->drain(std::chrono::steady_clock::now() + 20s));
  dispatcher.reset();
  EXPECT_EQ(metrics_.plugin_processes("w").Value(), 0);
}

TEST_F(ProcessRunnerTest, ACrashingMessageIsDeadLettered_TheNextOnesRunInAFreshChild) {
  auto dispatcher = start(2, 3);
  dispatcher->deliver(with_action("poison", "segfault", log_));
  for (int i = 0; i < 10; ++i)
    dispatcher->deliver(FakeDelivery::make("good-" + std::to_string(i), log_));
  ASSERT_TRUE(log_.wait_for_count(11, 60s));
  EXPECT_TRUE(dispatcher->drain(std::chrono::steady_clock::now() + 20s));
  int acked = 0;
  for (const auto& [id, settlement] : log_.entries()) {
    if (id == "poison") {
      EXPECT_EQ(settlement.kind, transport::Settlement::Kind::dead_letter);
      EXPECT_THAT(settlement.reason, ::testing::StartsWith("crash: SIGSEGV"));
    } else {
      acked += settlement.kind == transport::Settlement::Kind::ack;
    }
  }
  EXPECT_EQ(acked, 10);
  EXPECT_EQ(crashes("SIGSEGV"), 3);
}

TEST_F(ProcessRunnerTest, APoisonInAFullWindow_IsTheOnlyOneBlamed_TheOthersRunExactlyOnce) {
  // One child, prefetch 20: a window of 20. The poison sits in the middle of what is sent ahead;
  // the handler records every call, so a message run twice would show.
  const auto record = std::filesystem::temp_directory_path() /
                      ("process_runner_window_" + std::to_string(::getpid()) + ".tsv");
  std::filesystem::remove(record);
  auto dispatcher = start(1, 3, {{"record_file", record.string()}});
  std::vector<std::unique_ptr<transport::Delivery>> deliveries;
  for (int i = 0; i < 30; ++i) {
    if (i == 6)
      deliveries.push_back(with_action("poison", "segfault", log_));
    else
      deliveries.push_back(FakeDelivery::make("good-" + std::to_string(i), log_));
  }
  dispatcher->deliver_all(deliveries);
  ASSERT_TRUE(log_.wait_for_count(30, 60s));
  EXPECT_TRUE(dispatcher->drain(std::chrono::steady_clock::now() + 20s));

  std::map<std::string, int> calls;
  std::ifstream lines(record);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string worker, id;
    std::getline(fields, worker, '\t');
    std::getline(fields, id, '\t');
    ++calls[id];
  }
  std::filesystem::remove(record);
  EXPECT_EQ(calls["poison"], 3) << "run max_crashes times, blamed for its own deaths only";
  EXPECT_EQ(crashes("SIGSEGV"), 3);
  for (const auto& [id, settlement] : log_.entries()) {
    if (id == "poison") {
      EXPECT_EQ(settlement.kind, transport::Settlement::Kind::dead_letter);
      EXPECT_EQ(settlement.reason,
                "crash: SIGSEGV: its worker process died 3 times running this message");
    } else {
      EXPECT_EQ(settlement.kind, transport::Settlement::Kind::ack) << id;
      EXPECT_EQ(calls[id], 1) << id << " ran exactly once, though sent behind the poison";
    }
  }
  EXPECT_EQ(log_.entries().size(), 30u);
}

TEST_F(ProcessRunnerTest, AChildKilledBetweenMessages_BlamesNoMessage) {
  auto dispatcher = start(1, 3);
  dispatcher->deliver(FakeDelivery::make("first", log_));
  ASSERT_TRUE(log_.wait_for_count(1, 60s));
  ASSERT_TRUE(
      test_support::eventually([&] { return metrics_.plugin_processes("w").Value() == 1; }, 10s));
  // The child's pid: the only child of this process.
  pid_t child = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const auto close = text.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(text.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent == ::getpid())
      child = std::stoi(entry.path().filename());
  }
  ASSERT_GT(child, 0);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  ASSERT_TRUE(test_support::eventually([&] { return crashes("killed") == 1; }, 10s));
  dispatcher->deliver(FakeDelivery::make("second", log_));
  ASSERT_TRUE(log_.wait_for_count(2, 60s));
  EXPECT_EQ(log_.entries().at(1).second.kind, transport::Settlement::Kind::ack)
      << "the next message is not blamed for a death it did not see";
  EXPECT_TRUE(dispatcher->drain(std::chrono::steady_clock::now() + 20s));
}

TEST_F(ProcessRunnerTest, APluginWhoseInitCrashes_IsACrashLoopThatGivesEveryMessageBack) {
  std::atomic<int> loops{0};
  auto dispatcher =
      start(1, 3, {{"init_action", "segfault"}}, [&](const std::string&) { ++loops; });
  for (int i = 0; i < 3; ++i)
    dispatcher->deliver(FakeDelivery::make("held-" + std::to_string(i), log_));
  ASSERT_TRUE(log_.wait_for_count(3, 60s));
  for (const auto& [id, settlement] : log_.entries())
    EXPECT_EQ(settlement.kind, transport::Settlement::Kind::requeue) << id;
  EXPECT_TRUE(runner_->crash_looping());
  EXPECT_THAT(runner_->crash_loop_reason(), ::testing::HasSubstr("crash loop"));
  EXPECT_EQ(metrics_.plugin_crashloop("w").Value(), 1);
  EXPECT_EQ(loops.load(), 1) << "the host is told once";
  EXPECT_EQ(crashes("SIGSEGV"), 5);
  EXPECT_TRUE(dispatcher->drain(std::chrono::steady_clock::now() + 20s));
}

}  // namespace
}  // namespace warren::runtime
