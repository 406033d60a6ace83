// Harness::load_isolated: the scripted test plugin (tests/plugins/scripted) run in real
// warren-worker children, as isolation = "process" runs it: a crash on a message is reported,
// counted and dead-lettered at max_crashes as the host does, the next message gets a fresh
// child, and the child's logs and metrics reach the harness as an in-process handler's do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "isolation/children_die_of_signals.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::testing::Harness;
using warren::testing::LogLevel;
using warren::testing::Result;
using warren::testing::RetryPolicy;
using warren::testing::SettledMessage;
using warren::testing::TestMessage;

class HarnessIsolated : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { warren::isolation::let_children_die_of_signals(); }

  static Harness scripted(warren::testing::Settings settings = {}) {
    return Harness::load_isolated(WARREN_SCRIPTED_PLUGIN_PATH, std::move(settings), "orders");
  }

  static TestMessage message(const std::string& id, const std::string& action) {
    TestMessage m;
    m.message_id = id;
    m.body = "{}";
    m.headers["x-test-action"] = action;
    return m;
  }
};

TEST_F(HarnessIsolated, SegfaultOnAMessage_DeliverReportsTheCrash_AndTheNextGetsAFreshChild) {
  Harness harness = scripted();

  const Result crashed = harness.deliver(message("x", "segfault"));
  EXPECT_EQ(crashed.crash, "SIGSEGV") << crashed;
  EXPECT_EQ(crashed.kind, Result::Kind::retry) << crashed;

  const Result next = harness.deliver(message("y", "ack"));
  EXPECT_EQ(next.kind, Result::Kind::ack) << next;
  EXPECT_EQ(next.crash, "") << next;
}

TEST_F(HarnessIsolated, AbortOnAMessage_IsNamedSigabrt) {
  Harness harness = scripted();
  EXPECT_EQ(harness.deliver(message("x", "abort")).crash, "SIGABRT");
}

TEST_F(HarnessIsolated, HandlerPastHardTimeout_IsKilledAndNamedTimeout) {
  warren::testing::IsolationOptions options;
  options.hard_timeout = std::chrono::milliseconds(200);
  Harness harness = Harness::load_isolated(WARREN_SCRIPTED_PLUGIN_PATH, {}, "orders", options);

  EXPECT_EQ(harness.deliver(message("x", "spin")).crash, "timeout");
  EXPECT_EQ(harness.deliver(message("y", "ack")).kind, Result::Kind::ack);
}

TEST_F(HarnessIsolated, SegfaultEveryTime_IsDeadLetteredAfterMaxCrashesWithTheHostsReason) {
  Harness harness = scripted();

  const SettledMessage settled =
      harness.deliver_until_settled(message("x", "segfault"), RetryPolicy{});

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::dead_lettered) << settled;
  EXPECT_EQ(settled.reason, "crash: SIGSEGV: its worker process died 3 times running this message");
  ASSERT_EQ(settled.attempts.size(), 3u) << settled;
  for (const SettledMessage::Attempt& attempt : settled.attempts) {
    EXPECT_EQ(attempt.number, 1u) << settled;  // a crash is not a retry
    EXPECT_EQ(attempt.result.crash, "SIGSEGV") << settled;
  }
  EXPECT_TRUE(settled.attempts[0].run_again_now);
  EXPECT_FALSE(settled.attempts[2].run_again_now);

  const Result next = harness.deliver(message("y", "ack"));
  EXPECT_EQ(next.kind, Result::Kind::ack) << next;
}

TEST_F(HarnessIsolated, CrashBelowMaxCrashes_RunsAgainInAFreshChildAndIsAcked) {
  // Every second call of an instance segfaults: the first runs, the second dies, the fresh
  // child's first runs it again.
  Harness harness = scripted({{"crash_every", "2"}});
  EXPECT_EQ(harness.deliver(message("warm-up", "ack")).kind, Result::Kind::ack);

  const SettledMessage settled = harness.deliver_until_settled(message("x", "ack"), RetryPolicy{});

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::acked) << settled;
  ASSERT_EQ(settled.attempts.size(), 2u) << settled;
  EXPECT_EQ(settled.attempts[0].result.crash, "SIGSEGV");
  EXPECT_EQ(settled.attempts[1].number, 1u);
}

TEST_F(HarnessIsolated, MaxCrashesOfTheConfiguration_IsTheOneCounted) {
  Harness harness = scripted();
  harness.use_config_text(R"(
[broker]
transport = "memory"

[[queues]]
name = "work"
allow_message_loss = true

[[workers]]
name = "orders"
plugin = "scripted"
queue = "work"
max_crashes = 2
)");

  const SettledMessage settled = harness.deliver_until_settled(message("x", "segfault"));

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::dead_lettered) << settled;
  EXPECT_EQ(settled.attempts.size(), 2u) << settled;
  EXPECT_EQ(settled.reason, "crash: SIGSEGV: its worker process died 2 times running this message");
}

TEST_F(HarnessIsolated, InitSegfaults_LoadIsolatedThrowsNamingTheSignal) {
  EXPECT_THAT(
      [] {
        scripted({{"init_action", "segfault"}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("SIGSEGV")));
}

TEST_F(HarnessIsolated, InitThrows_LoadIsolatedThrowsWithTheReason) {
  EXPECT_THAT(
      [] {
        scripted({{"init_action", "throw"}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("worker 'orders'")));
}

TEST_F(HarnessIsolated, FileNotNamedLikeAPlugin_IsRefusedAsByLoad) {
  EXPECT_THAT([] { Harness::load_isolated("/tmp/plugin.so"); },
              ThrowsMessage<std::runtime_error>(HasSubstr("lib<name>.so")));
}

TEST_F(HarnessIsolated, LogsAndMetricsOfTheChild_AreSeenAsInProcess) {
  Harness harness = scripted();

  ASSERT_EQ(harness.deliver(message("m-1", "ack")).kind, Result::Kind::ack);

  bool logged = false;
  for (const auto& record : harness.logs()) {
    if (record.text == "scripted: ack") {
      logged = true;
      EXPECT_EQ(record.level, LogLevel::debug);
      EXPECT_EQ(record.message_id, "m-1");
    }
  }
  EXPECT_TRUE(logged) << "no 'scripted: ack' log line";
  const auto metrics = harness.metrics();
  const auto actions = metrics.find("warren_plugin_scripted_actions_total");
  ASSERT_NE(actions, metrics.end());
  EXPECT_EQ(actions->second.series.at({"ack"}).sum(), 1.0);
}

TEST_F(HarnessIsolated, PublishOfTheChild_IsRecordedAsInProcess) {
  Harness harness = scripted();

  ASSERT_EQ(harness.deliver(message("m-1", "publish:orders:order.placed")).kind, Result::Kind::ack);

  const auto published = harness.published();
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].exchange, "orders");
  EXPECT_EQ(published[0].routing_key, "order.placed");
}

TEST_F(HarnessIsolated, DescriptorNamesThePluginTheChildLoaded) {
  Harness harness = scripted();
  EXPECT_STREQ(harness.descriptor().name, "scripted");
}

TEST_F(HarnessIsolated, WithoutWarrenWorker_LoadIsolatedNamesWhereItLooked) {
  const std::string saved = std::getenv("WARREN_WORKER_BINARY");
  ::setenv("WARREN_WORKER_BINARY", "/nonexistent/warren-worker", 1);
  EXPECT_THAT([] { scripted(); },
              ThrowsMessage<std::runtime_error>(HasSubstr("/nonexistent/warren-worker")));
  ::setenv("WARREN_WORKER_BINARY", saved.c_str(), 1);
}

}  // namespace
