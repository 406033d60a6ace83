// Specification of the stop signals: SIGINT/SIGTERM request a graceful stop, and nothing else
// the process may receive takes that away.
#include "runtime/shutdown.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <initializer_list>

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;

// Each runs in a child process (a death test): the signals go to the whole process, and the
// child's only other thread is the watcher, which blocks them like the thread that created it.
[[noreturn]] void exit_zero_when_stop_requested_after(std::initializer_list<int> signals) {
  ShutdownSignal shutdown;
  SignalWatcher watcher(shutdown);
  for (const int signal_number : signals)
    kill(getpid(), signal_number);
  std::_Exit(shutdown.wait_for(10s) ? 0 : 1);
}

TEST(SignalWatcher, Sigterm_RequestsAGracefulStop) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_zero_when_stop_requested_after({SIGTERM}), testing::ExitedWithCode(0), "");
}

TEST(SignalWatcher, StraySigusr2_ALaterSigtermStillRequestsAGracefulStop) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_zero_when_stop_requested_after({SIGUSR2, SIGTERM}), testing::ExitedWithCode(0),
              "");
}

}  // namespace
}  // namespace warren::runtime

namespace warren::runtime {
namespace {

TEST(ShutdownSignalReload, ReloadRequests_CountAsOneAndAreTakenByTheWait) {
  ShutdownSignal signal;
  signal.request_reload();
  signal.request_reload();
  EXPECT_EQ(signal.wait_for_stop_or_reload(), ShutdownSignal::Event::reload);
  signal.request();
  EXPECT_EQ(signal.wait_for_stop_or_reload(), ShutdownSignal::Event::stop);
}

TEST(ShutdownSignalReload, StopWinsOverAPendingReload) {
  ShutdownSignal signal;
  signal.request_reload();
  signal.request();
  EXPECT_EQ(signal.wait_for_stop_or_reload(), ShutdownSignal::Event::stop);
  EXPECT_EQ(signal.wait_for_stop_or_reload(), ShutdownSignal::Event::stop);
}

}  // namespace
}  // namespace warren::runtime
