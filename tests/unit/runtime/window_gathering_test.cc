// Specification of WindowGathering: a window begun with less than a quarter of its messages
// waits for more while waiting has been finding them; after a few misses in a row it is tried
// only now and then, and a hit brings it back.
#include "runtime/window_gathering.h"

#include <gtest/gtest.h>

namespace warren::runtime {
namespace {

TEST(WindowGathering, AWindowBegunSmall_GathersAndOneBegunFullEnoughDoesNot) {
  WindowGathering gathering;
  EXPECT_TRUE(gathering.should_gather(1, 100));
  EXPECT_TRUE(gathering.should_gather(24, 100));
  EXPECT_FALSE(gathering.should_gather(25, 100)) << "a quarter of the window is enough to send";
  EXPECT_FALSE(gathering.should_gather(1, 1)) << "a window of one has room for nothing more";
  EXPECT_FALSE(gathering.should_gather(1, 4));
  EXPECT_TRUE(gathering.should_gather(1, 5));
}

TEST(WindowGathering, NothingFoundAFewTimes_OnlyProbesNowAndThen_UntilItFindsAgain) {
  WindowGathering gathering;
  int misses = 0;
  while (gathering.should_gather(1, 100) && misses < 100) {
    gathering.gathered(0);
    ++misses;
  }
  EXPECT_LT(misses, 10) << "a low rate stops gathering after a few misses";
  int tries = 0;
  for (int window = 0; window < 320; ++window) {
    if (gathering.should_gather(1, 100)) {
      ++tries;
      gathering.gathered(0);
    }
  }
  EXPECT_GE(tries, 5);
  EXPECT_LE(tries, 15) << "about one window in 32 still tries";

  // The rate rose: one probe that finds messages, and it gathers again.
  while (!gathering.should_gather(1, 100)) {
  }
  gathering.gathered(3);
  EXPECT_TRUE(gathering.should_gather(1, 100));
  gathering.gathered(2);
  EXPECT_TRUE(gathering.should_gather(1, 100));
}

}  // namespace
}  // namespace warren::runtime
