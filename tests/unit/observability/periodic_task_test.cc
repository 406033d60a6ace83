// PeriodicTask: runs its task at the interval on its own thread, and its destructor stops it at
// once rather than after the interval (an exit must not wait for the next report).
#include "observability/periodic_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "eventually.h"

namespace warren::observability {
namespace {

using namespace std::chrono_literals;

TEST(PeriodicTask, RunsTheTaskRepeatedlyAtTheInterval) {
  std::atomic<int> runs{0};
  PeriodicTask task(10ms, [&runs] { ++runs; });

  EXPECT_TRUE(test_support::eventually([&runs] { return runs.load() >= 3; }, 10s));
}

TEST(PeriodicTask, Destruction_StopsAtOnceWithoutRunningTheTask) {
  std::atomic<int> runs{0};
  const auto start = std::chrono::steady_clock::now();
  {
    PeriodicTask task(1h, [&runs] { ++runs; });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << "waited for the interval";
  EXPECT_EQ(runs.load(), 0);
}

}  // namespace
}  // namespace warren::observability
