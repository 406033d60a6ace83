// SpinAdvisor (brief_spin.h): polling goes on while polls mostly find the item, stops when they
// mostly miss, and comes back after probes that hit.
#include <gtest/gtest.h>

#include "transport/brief_spin.h"

namespace warren::transport {
namespace {

int spins_in(SpinAdvisor& advisor, int calls) {
  int spins = 0;
  for (int i = 0; i < calls; ++i)
    spins += advisor.should_spin() ? 1 : 0;
  return spins;
}

TEST(SpinAdvisor, PollsThatHit_KeepPolling) {
  SpinAdvisor advisor;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(advisor.should_spin());
    advisor.record(true);
  }
}

TEST(SpinAdvisor, PollsThatMiss_StopAfterAFew_ButProbesGoOn) {
  SpinAdvisor advisor;
  int misses = 0;
  while (advisor.should_spin() && misses < 100) {
    advisor.record(false);
    ++misses;
  }
  // Four misses bring the score to the floor; the fifth poll is the first probe.
  EXPECT_EQ(misses, 5) << "polling should stop after a few misses";
  EXPECT_EQ(spins_in(advisor, 320), 10) << "one probe every 32 calls";
}

TEST(SpinAdvisor, ProbesThatHit_BringPollingBack) {
  SpinAdvisor advisor;
  for (int i = 0; i < 10; ++i)
    advisor.record(false);
  ASSERT_FALSE(advisor.should_spin() && advisor.should_spin());
  advisor.record(true);  // a probe found the item
  EXPECT_TRUE(advisor.should_spin());
}

TEST(SpinAdvisor, MostlyHitting_ToleratesSomeMisses) {
  SpinAdvisor advisor;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(advisor.should_spin()) << "after " << i << " polls, 1 in 3 missing";
    advisor.record(i % 3 != 0);
  }
}

}  // namespace
}  // namespace warren::transport
