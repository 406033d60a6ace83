// How an I/O thread waits (io_wait.h): what a wait reports, and how long it may sleep.
#include "broker/io_wait.h"

#include <gtest/gtest.h>

#include "broker/wakeup_queue.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;

TEST(IoWait, SignalledWakeup_IsReportedUntilDrained) {
  Wakeup wakeup;
  wakeup.signal();
  const IoReady first = wait_for_io(nullptr, wakeup.fd(), 0ms);
  EXPECT_TRUE(first.wakeup);
  EXPECT_FALSE(first.socket);  // no connection
  EXPECT_TRUE(wait_for_io(nullptr, wakeup.fd(), 0ms).wakeup) << "not drained: still readable";
  wakeup.drain();
  EXPECT_FALSE(wait_for_io(nullptr, wakeup.fd(), 0ms).wakeup);
}

TEST(IoWait, NothingHappened_TimesOutReportingNothing) {
  Wakeup wakeup;
  const IoReady ready = wait_for_io(nullptr, wakeup.fd(), 1ms);
  EXPECT_FALSE(ready.wakeup);
  EXPECT_FALSE(ready.socket);
}

TEST(IoWait, WakeupInterval_IsAQuarterOfTheHeartbeatAndAtMost50Ms) {
  EXPECT_EQ(wakeup_interval(0ms), kMaxWakeupInterval);
  EXPECT_EQ(wakeup_interval(60s), 50ms);
  EXPECT_EQ(wakeup_interval(100ms), 25ms);
  EXPECT_EQ(wakeup_interval(2ms), 1ms);
}

}  // namespace
}  // namespace warren::broker
