// Specification of what a reload does to each worker (runtime/worker_diff.h).
#include "runtime/worker_diff.h"

#include <gtest/gtest.h>

namespace warren::runtime {
namespace {

using Kind = WorkerChange::Kind;

config::WorkerConfig worker(std::string name, std::string plugin = "orders") {
  config::WorkerConfig w;
  w.name = std::move(name);
  w.plugin = std::move(plugin);
  w.queue = "q." + w.name;
  return w;
}

const WorkerChange& change_of(const std::vector<WorkerChange>& changes, const std::string& name) {
  for (const auto& change : changes) {
    if (change.worker == name)
      return change;
  }
  throw std::runtime_error("no change for " + name);
}

class WorkerDiff : public ::testing::Test {
 protected:
  std::vector<WorkerChange> diff(const std::vector<config::WorkerConfig>& reloaded,
                                 std::map<std::string, std::string> hashes = {{"orders", "h1"},
                                                                              {"billing", "h2"}}) {
    std::vector<RunningWorker> running;
    for (const auto& w : before)
      running.push_back({&w, w.plugin == "orders" ? "h1" : "h2"});
    return diff_workers(running, reloaded, hashes);
  }
  std::vector<config::WorkerConfig> before{worker("a"), worker("b"), worker("c", "billing")};
};

TEST_F(WorkerDiff, SameConfigAndPluginContent_EveryWorkerUnchanged) {
  const auto changes = diff(before);
  ASSERT_EQ(changes.size(), 3u);
  for (const auto& change : changes) {
    EXPECT_EQ(change.kind, Kind::unchanged) << change.worker;
    EXPECT_TRUE(change.what.empty());
  }
}

TEST_F(WorkerDiff, PrefetchAndConcurrencyOfOne_OnlyThatOneChangedSayingWhat) {
  auto after = before;
  after[1].prefetch = 50;
  after[1].concurrency = 4;
  const auto changes = diff(after);
  EXPECT_EQ(change_of(changes, "a").kind, Kind::unchanged);
  EXPECT_EQ(change_of(changes, "c").kind, Kind::unchanged);
  const WorkerChange& b = change_of(changes, "b");
  EXPECT_EQ(b.kind, Kind::changed);
  EXPECT_EQ(describe(b), "changed: prefetch 20 -> 50, concurrency 1 -> 4");
}

TEST_F(WorkerDiff, PluginFileContentChanged_EveryWorkerOfThatPluginChanged) {
  const auto changes = diff(before, {{"orders", "h1-new"}, {"billing", "h2"}});
  EXPECT_EQ(describe(change_of(changes, "a")), "changed: plugin file content");
  EXPECT_EQ(change_of(changes, "b").kind, Kind::changed);
  EXPECT_EQ(change_of(changes, "c").kind, Kind::unchanged);
}

TEST_F(WorkerDiff, SettingsRetryAndQueue_AreChangesButSettingValuesAreNotShown) {
  auto after = before;
  after[0].settings["token"] = "s3cret";
  after[1].retry.max_attempts = 9;
  after[2].queue = "elsewhere";
  const auto changes = diff(after);
  EXPECT_EQ(describe(change_of(changes, "a")), "changed: settings");
  EXPECT_NE(describe(change_of(changes, "b")).find("retry"), std::string::npos);
  EXPECT_EQ(describe(change_of(changes, "c")), "changed: queue 'q.c' -> 'elsewhere'");
}

TEST_F(WorkerDiff, AnotherPlugin_IsAChangeEvenWithTheSameContentHash) {
  auto after = before;
  after[0].plugin = "billing";
  const auto changes = diff(after, {{"orders", "h1"}, {"billing", "h1"}});
  EXPECT_EQ(describe(change_of(changes, "a")), "changed: plugin 'orders' -> 'billing'");
}

TEST_F(WorkerDiff, WorkerAddedAndWorkerRemoved_ReportedAsSuchInTheReloadedOrderThenRemoved) {
  std::vector<config::WorkerConfig> after{worker("d"), before[0], before[2]};
  const auto changes = diff(after);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[0].worker, "d");
  EXPECT_EQ(changes[0].kind, Kind::added);
  EXPECT_EQ(changes[1].kind, Kind::unchanged);
  EXPECT_EQ(changes[2].kind, Kind::unchanged);
  EXPECT_EQ(changes[3].worker, "b");
  EXPECT_EQ(changes[3].kind, Kind::removed);
}

TEST_F(WorkerDiff, EmptyRunningConfig_EveryWorkerAdded) {
  before.clear();
  const auto changes = diff({worker("a")});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(describe(changes[0]), "added");
}

}  // namespace
}  // namespace warren::runtime
