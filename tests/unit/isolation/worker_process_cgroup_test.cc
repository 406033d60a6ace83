// WorkerProcess with memory_max through the host's cgroups (isolation/worker_cgroups.h), against a
// stand-in tree (fake_cgroup_tree.h): the real warren-worker is put in a leaf of its own before it
// loads the plugin, without RLIMIT_DATA (the cgroup's memory.max limits it instead), and a SIGKILL
// is named "oom" when the leaf's memory.events counts an OOM kill, "killed" when it does not.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <string>

#include "fake_cgroup_tree.h"
#include "isolation/worker_cgroups.h"
#include "isolation/worker_process.h"
#include "worker_process_fakes.h"

namespace warren::isolation {
namespace {

using namespace warren::isolation::test_host;
using namespace warren::isolation::test_cgroups;

// The "Max data size" line of /proc/PID/limits: "unlimited" or the soft limit in bytes.
std::string data_limit(pid_t pid) {
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(limits, line);) {
    if (line.starts_with("Max data size")) {
      std::istringstream fields(line.substr(std::string_view("Max data size").size()));
      std::string soft;
      fields >> soft;
      return soft;
    }
  }
  return "";
}

class WorkerProcessCgroupTest : public ::testing::Test {
 protected:
  WorkerProcessCgroupTest() {
    cgroups_ = std::make_unique<WorkerCgroups>(
        CgroupLocation{tree_.root(), FakeCgroupTree::kCgroupFile, 4242});
    options_.memory_max = 256u << 20;
    options_.cgroups = cgroups_.get();
  }

  // The child's leaf: the first this test's host made.
  std::filesystem::path leaf() const { return tree_.service() / "worker-orders-1"; }

  FakeCgroupTree tree_;
  std::unique_ptr<WorkerCgroups> cgroups_;
  WorkerProcessOptions options_ = options();
  FakeWorker worker_;
};

TEST_F(WorkerProcessCgroupTest, TheChild_IsInItsLeafWithMemoryMaxAndNoDataLimit) {
  WorkerProcess process(worker_binary(), options_, worker_);
  process.start();
  EXPECT_EQ(read(leaf() / "cgroup.procs"), std::to_string(process.pid()));
  EXPECT_EQ(read(leaf() / "memory.max"), std::to_string(256u << 20));
  EXPECT_EQ(data_limit(process.pid()), "unlimited");
  FakeMessage acked;
  EXPECT_EQ(run(process, with_action("ack"), acked), std::nullopt);
}

TEST_F(WorkerProcessCgroupTest, NoUsableCgroup_TheChildHasMemoryMaxAsItsDataLimit) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "under ASan or TSan a data limit breaks the sanitizer's own mappings "
                  "(worker_process_faults_test skips its oom test too)";
#endif
  write(tree_.service() / "cgroup.controllers", "cpu pids\n");
  WorkerProcess process(worker_binary(), options_, worker_);
  process.start();
  EXPECT_FALSE(cgroups_->usable());
  EXPECT_FALSE(std::filesystem::exists(leaf()));
  EXPECT_EQ(data_limit(process.pid()), std::to_string(256u << 20));
}

TEST_F(WorkerProcessCgroupTest, ASigkillItsLeafCountsAsAnOomKill_IsOom) {
  WorkerProcess process(worker_binary(), options_, worker_);
  process.start();
  write(leaf() / "memory.events", "low 0\nhigh 0\nmax 40\noom 1\noom_kill 1\n");
  ::kill(process.pid(), SIGKILL);  // as the kernel's OOM killer does
  FakeMessage message;
  EXPECT_EQ(run(process, with_action("ack"), message).value_or(WorkerDeath{}).reason, "oom");
}

TEST_F(WorkerProcessCgroupTest, ASigkillWithNoOomKillInItsLeaf_IsKilled) {
  WorkerProcess process(worker_binary(), options_, worker_);
  process.start();
  write(leaf() / "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  ::kill(process.pid(), SIGKILL);  // an operator's kill -9
  FakeMessage message;
  EXPECT_EQ(run(process, with_action("ack"), message).value_or(WorkerDeath{}).reason, "killed");
}

}  // namespace
}  // namespace warren::isolation
