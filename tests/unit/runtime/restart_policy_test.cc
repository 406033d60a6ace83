// Specification of RestartPolicy (runtime/restart_policy.h): the delay before a worker process
// starts again doubles from 200 ms to 30 s, stretched by at most a quarter, and starts over after
// a minute of health; five deaths within a minute that blamed no message make a crash loop.
#include "runtime/restart_policy.h"

#include <gtest/gtest.h>

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = RestartPolicy::Clock;

TEST(RestartPolicy, DelayDoublesFrom200msUpTo30s) {
  RestartPolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  std::vector<long long> delays;
  for (int i = 0; i < 10; ++i)
    delays.push_back(policy.died(t0 + std::chrono::seconds(i), true, 0.0).count());
  EXPECT_EQ(delays,
            (std::vector<long long>{200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}));
}

TEST(RestartPolicy, JitterStretchesByAtMostAQuarter_NeverPastTheMax) {
  RestartPolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  EXPECT_EQ(policy.died(t0, true, 0.999).count(), 249);
  for (int i = 0; i < 20; ++i)
    EXPECT_LE(policy.died(t0, true, 0.999).count(), 30'000);
}

TEST(RestartPolicy, AMinuteOfHealth_StartsTheDelayOver) {
  RestartPolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  policy.died(t0, true, 0.0);
  policy.died(t0 + 1s, true, 0.0);
  policy.started(t0 + 2s);
  EXPECT_EQ(policy.died(t0 + 30s, true, 0.0).count(), 800) << "healthy for only 28 s";
  policy.started(t0 + 31s);
  EXPECT_EQ(policy.died(t0 + 92s, true, 0.0).count(), 200) << "healthy for 61 s";
}

TEST(RestartPolicy, FiveUnblamedDeathsInAMinute_AreACrashLoop) {
  RestartPolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  for (int i = 0; i < 4; ++i)
    policy.died(t0 + std::chrono::seconds(10 * i), false, 0.0);
  EXPECT_FALSE(policy.crash_loop());
  policy.died(t0 + 50s, false, 0.0);
  EXPECT_TRUE(policy.crash_loop());
}

TEST(RestartPolicy, UnblamedDeathsSpreadOverMoreThanAMinute_AreNoCrashLoop) {
  RestartPolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  for (int i = 0; i < 10; ++i)
    policy.died(t0 + std::chrono::seconds(20 * i), false, 0.0);
  EXPECT_FALSE(policy.crash_loop());
}

TEST(RestartPolicy, DeathsThatBlameAMessage_AreNoCrashLoop) {
  RestartPolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  for (int i = 0; i < 20; ++i)
    policy.died(t0 + std::chrono::milliseconds(i), true, 0.0);
  EXPECT_FALSE(policy.crash_loop()) << "crash accounting dead-letters the culprit instead";
}

}  // namespace
}  // namespace warren::runtime
