// WorkerCgroups against a directory tree standing in for /sys/fs/cgroup (this test cannot count
// on a delegated cgroup v2 with the memory controller): which cgroup is the host's, when it is
// usable and why not, the host's move into `host/` before enabling the memory controller (the
// "no internal processes" rule), and each child's leaf: memory.max, its pid, its OOM kills, and
// its removal.
#include "isolation/worker_cgroups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "fake_cgroup_tree.h"

namespace warren::isolation {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace warren::isolation::test_cgroups;

// The host's cgroup in a stand-in tree (fake_cgroup_tree.h), as the host's pid 4242 sees it.
class WorkerCgroupsTest : public ::testing::Test {
 protected:
  std::unique_ptr<WorkerCgroups> prepare(
      const std::string& cgroup_file = FakeCgroupTree::kCgroupFile) {
    auto cgroups = std::make_unique<WorkerCgroups>(CgroupLocation{root_, cgroup_file, 4242},
                                                   [this](const WorkerCgroups&) { ++decided_; });
    if (cgroups->usable())
      return cgroups;
    why_not_ = cgroups->why_not();
    return nullptr;
  }

  FakeCgroupTree tree_;
  const fs::path& root_ = tree_.root();
  const fs::path& service_ = tree_.service();
  std::string why_not_;
  int decided_ = 0;
};

TEST_F(WorkerCgroupsTest, MadeButNotYetUsed_LooksAtNothingAndChangesNothing) {
  WorkerCgroups cgroups(CgroupLocation{root_, FakeCgroupTree::kCgroupFile, 4242});
  EXPECT_FALSE(fs::exists(service_ / "host"));
  EXPECT_EQ(read(service_ / "cgroup.subtree_control"), "");
}

TEST_F(WorkerCgroupsTest, Usable_IsDecidedOnceAndSaidOnce) {
  auto cgroups = prepare();
  ASSERT_NE(cgroups, nullptr) << why_not_;
  EXPECT_TRUE(cgroups->usable());
  EXPECT_TRUE(cgroups->usable());
  EXPECT_EQ(decided_, 1);
}

TEST_F(WorkerCgroupsTest, ACgroupTheHostSharesWithOtherProcesses_IsNotUsableAndNothingMoves) {
  write(service_ / "cgroup.procs", "4242\n999\n");  // a shell, a terminal
  EXPECT_EQ(prepare(), nullptr);
  EXPECT_THAT(why_not_, HasSubstr("holds other processes than the host (999)"));
  EXPECT_FALSE(fs::exists(service_ / "host"));
  EXPECT_EQ(read(service_ / "cgroup.subtree_control"), "");
}

TEST_F(WorkerCgroupsTest, ADelegatedCgroup_TheHostMovesIntoHostAndEnablesMemoryForLeaves) {
  auto cgroups = prepare();
  ASSERT_NE(cgroups, nullptr) << why_not_;
  EXPECT_EQ(cgroups->dir(), service_);
  EXPECT_EQ(read(service_ / "host" / "cgroup.procs"), "4242");
  EXPECT_EQ(read(service_ / "cgroup.subtree_control"), "+memory");
}

TEST_F(WorkerCgroupsTest, MemoryAlreadyEnabledBelowTheHostsCgroup_NothingIsMoved) {
  write(service_ / "cgroup.subtree_control", "memory pids\n");
  write(service_ / "cgroup.procs", "");
  ASSERT_NE(prepare(), nullptr) << why_not_;
  EXPECT_FALSE(fs::exists(service_ / "host"));
  EXPECT_EQ(read(service_ / "cgroup.subtree_control"), "memory pids\n");
}

TEST_F(WorkerCgroupsTest, NoCgroupV2Line_IsNotUsableAndSaysWhy) {
  EXPECT_EQ(prepare("4:memory:/system.slice/warren.service\n"), nullptr);
  EXPECT_EQ(decided_, 1);
  EXPECT_THAT(why_not_, HasSubstr("no cgroup v2"));
}

TEST_F(WorkerCgroupsTest, TheMemoryControllerNotOffered_IsNotUsableAndNothingChanges) {
  write(service_ / "cgroup.controllers", "hugetlb\n");
  EXPECT_EQ(prepare(), nullptr);
  EXPECT_THAT(why_not_, HasSubstr("the memory controller is not available in " + service_.string() +
                                  " (cgroup.controllers: 'hugetlb')"));
  EXPECT_FALSE(fs::exists(service_ / "host"));
  EXPECT_EQ(read(service_ / "cgroup.subtree_control"), "");
}

TEST_F(WorkerCgroupsTest, TheSystemsRootCgroup_IsNotUsed) {
  write(root_ / "cgroup.controllers", "cpu memory\n");  // the root has no cgroup.type
  EXPECT_EQ(prepare("0::/\n"), nullptr);
  EXPECT_THAT(why_not_, HasSubstr("root cgroup"));
}

TEST_F(WorkerCgroupsTest, NotACgroupDirectory_IsNotUsable) {
  EXPECT_EQ(prepare("0::/elsewhere\n"), nullptr);
  EXPECT_THAT(why_not_, HasSubstr("is not a cgroup v2 directory"));
}

TEST_F(WorkerCgroupsTest, ALeafPerChild_HasMemoryMaxTakesItsPidCountsOomKillsAndIsRemoved) {
  auto cgroups = prepare();
  ASSERT_NE(cgroups, nullptr) << why_not_;
  auto first = cgroups->leaf("orders", 64u << 20);
  auto second = cgroups->leaf("orders", 64u << 20);
  EXPECT_EQ(first->dir(), service_ / "worker-orders-1");
  EXPECT_EQ(second->dir(), service_ / "worker-orders-2");
  EXPECT_EQ(read(first->dir() / "memory.max"), "67108864");

  first->add(777);
  EXPECT_EQ(read(first->dir() / "cgroup.procs"), "777");
  EXPECT_EQ(first->oom_kills(), 0u);  // no memory.events yet
  write(first->dir() / "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n");
  EXPECT_EQ(first->oom_kills(), 1u);

  // A real leaf's files go with it; here they are removed by hand.
  const fs::path dir = first->dir();
  for (const char* file : {"memory.max", "cgroup.procs", "memory.events"})
    fs::remove(dir / file);
  first.reset();
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(WorkerCgroupsTest, AWorkerNameThatIsNoPlainDirectoryName_StaysInTheHostsCgroup) {
  auto cgroups = prepare();
  ASSERT_NE(cgroups, nullptr) << why_not_;
  EXPECT_EQ(cgroups->leaf("../../eu orders", 1024)->dir(), service_ / "worker-.._.._eu_orders-1");
}

TEST_F(WorkerCgroupsTest, ALeafLeftByAnEarlierHost_IsMadeAnew) {
  auto cgroups = prepare();
  ASSERT_NE(cgroups, nullptr) << why_not_;
  fs::create_directory(service_ / "worker-orders-1");  // empty, as a killed host leaves it
  auto leaf = cgroups->leaf("orders", 1024);
  EXPECT_EQ(read(leaf->dir() / "memory.max"), "1024");
}

}  // namespace
}  // namespace warren::isolation
