// Specification of the solo gate: shared passes run together, an alone pass runs with nobody
// else, and a waiting alone pass is not starved by a stream of shared ones.
#include "runtime/solo_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <random>
#include <thread>
#include <vector>

namespace warren::runtime {
namespace {

TEST(SoloGate, SharedPasses_AreHeldTogether) {
  SoloGate gate;
  constexpr int kThreads = 4;
  std::latch all_inside(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      const SoloGate::Pass pass = gate.shared();
      EXPECT_FALSE(pass.alone());
      all_inside.arrive_and_wait();  // would never return if shared passes excluded each other
    });
  }
  for (auto& thread : threads)
    thread.join();
}

TEST(SoloGate, AlonePass_NeverOverlapsAnyOtherPass) {
  SoloGate gate;
  std::atomic<int> shared_inside{0};
  std::atomic<int> alone_inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> alone_runs{0};
  constexpr int kThreads = 4;
  constexpr int kRounds = 3000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand random(static_cast<unsigned>(t + 1));
      for (int round = 0; round < kRounds; ++round) {
        if (random() % 20 == 0) {
          const SoloGate::Pass pass = gate.alone();
          if (alone_inside.fetch_add(1) != 0 || shared_inside.load() != 0)
            ++overlaps;
          std::this_thread::yield();
          if (shared_inside.load() != 0)
            ++overlaps;
          alone_inside.fetch_sub(1);
          ++alone_runs;
        } else {
          const SoloGate::Pass pass = gate.shared();
          shared_inside.fetch_add(1);
          if (alone_inside.load() != 0)
            ++overlaps;
          std::this_thread::yield();
          shared_inside.fetch_sub(1);
        }
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(alone_runs.load(), 0);
}

TEST(SoloGate, WaitingAlonePass_IsNotStarvedByAStreamOfSharedPasses) {
  SoloGate gate;
  std::atomic<bool> done{false};
  std::atomic<long> shared_runs{0};
  std::latch streaming(3);
  std::vector<std::thread> stream;
  for (int t = 0; t < 3; ++t) {
    stream.emplace_back([&] {
      streaming.count_down();
      while (!done.load()) {
        const SoloGate::Pass pass = gate.shared();
        ++shared_runs;
      }
    });
  }
  streaming.wait();
  {
    // Returns only because shared passes that arrive after it wait (else: the test's timeout).
    const SoloGate::Pass pass = gate.alone();
    EXPECT_TRUE(pass.alone());
  }
  done.store(true);
  for (auto& thread : stream)
    thread.join();
}

TEST(SoloGate, MovedPass_ReleasesOnce) {
  SoloGate gate;
  {
    SoloGate::Pass first = gate.alone();
    SoloGate::Pass moved(std::move(first));
    EXPECT_TRUE(moved.alone());
  }
  const SoloGate::Pass again = gate.alone();  // would wait forever if the gate were still held
  EXPECT_TRUE(again.alone());
}

}  // namespace
}  // namespace warren::runtime
