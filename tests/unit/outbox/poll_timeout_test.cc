// poll_timeout_ms: the relay's waits handed to poll(2), which reads a negative int as "forever".
#include "outbox/poll_timeout.h"

#include <gtest/gtest.h>

#include <chrono>
#include <climits>

namespace warren::outbox {
namespace {

using namespace std::chrono_literals;

TEST(PollTimeout, OrdinaryWait_IsItsMilliseconds) {
  EXPECT_EQ(poll_timeout_ms(1500ms), 1500);
  EXPECT_EQ(poll_timeout_ms(0ms), 0);
}

TEST(PollTimeout, WaitLongerThanAnIntOfMilliseconds_IsCappedNotWrappedIntoForever) {
  // 30 days is 2,592,000,000 ms: cast to int it wraps to a negative number, which poll() takes
  // as "wait forever" (a relay with that poll_interval would never poll again).
  EXPECT_EQ(poll_timeout_ms(std::chrono::hours(24 * 30)), INT_MAX);
  EXPECT_EQ(poll_timeout_ms(std::chrono::milliseconds::max()), INT_MAX);
}

TEST(PollTimeout, NegativeWait_DoesNotWaitAtAll) {
  EXPECT_EQ(poll_timeout_ms(-5ms), 0);
}

}  // namespace
}  // namespace warren::outbox
