// The scripted test plugin does exactly what each action says, and leaves one whole trace line
// per call, written before the action (so even abort is traced).
#include "scripted.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "eventually.h"
#include "temp_dir.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::test_plugins::CrashSchedule;
using warren::test_plugins::Scripted;
using warren::test_plugins::ScriptedAction;
using warren::test_support::eventually;
using warren::test_support::TempDir;
using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

TestMessage with_action(const std::string& action, std::string message_id = "m-1",
                        std::uint32_t attempt = 1) {
  TestMessage message;
  message.body = "payload";
  message.message_id = std::move(message_id);
  message.attempt = attempt;
  if (!action.empty())
    message.headers = {{"x-test-action", action}};
  return message;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct ActionCase {
  std::string action;
  Result::Kind kind;
  Result::Error error;
  std::string reason;
};

class ScriptedActionTest : public ::testing::TestWithParam<ActionCase> {};

TEST_P(ScriptedActionTest, ActionHeader_GivesItsOutcome) {
  const ActionCase& expected = GetParam();
  Harness harness = Harness::of<Scripted>();

  const Result r = harness.deliver(with_action(expected.action));

  EXPECT_EQ(r.kind, expected.kind) << r;
  EXPECT_EQ(r.error, expected.error) << r;
  EXPECT_EQ(r.reason, expected.reason) << r;
}

INSTANTIATE_TEST_SUITE_P(
    Actions, ScriptedActionTest,
    ::testing::Values(ActionCase{"ack", Result::Kind::ack, Result::Error::none, ""},
                      ActionCase{"retry", Result::Kind::retry, Result::Error::none, ""},
                      ActionCase{"dead_letter:price is negative", Result::Kind::dead_letter,
                                 Result::Error::none, "price is negative"},
                      ActionCase{"throw", Result::Kind::retry, Result::Error::std_exception,
                                 "scripted failure"},
                      ActionCase{"throw_int", Result::Kind::retry, Result::Error::unknown,
                                 "a non-std exception was thrown"},
                      ActionCase{"permanent", Result::Kind::dead_letter, Result::Error::permanent,
                                 "scripted permanent failure"},
                      ActionCase{"sleep:1", Result::Kind::ack, Result::Error::none, ""}),
    [](const auto& test) { return test.param.action.substr(0, test.param.action.find(':')); });

TEST(Scripted, RetryWithMilliseconds_AsksForThatDelay) {
  Harness harness = Harness::of<Scripted>();
  const Result r = harness.deliver(with_action("retry:250"));
  EXPECT_EQ(r.kind, Result::Kind::retry);
  EXPECT_EQ(r.delay, std::chrono::milliseconds(250));
}

TEST(Scripted, NoHeader_PerformsTheDefaultAction) {
  EXPECT_EQ(Harness::of<Scripted>().deliver(with_action("")).kind, Result::Kind::ack);
  Harness retrying = Harness::of<Scripted>({{"default_action", "retry"}});
  EXPECT_EQ(retrying.deliver(with_action("")).kind, Result::Kind::retry);
}

TEST(Scripted, InvalidDefaultAction_FailsConstructionListingTheValidOnes) {
  EXPECT_THAT(
      [] {
        Harness::of<Scripted>({{"default_action", "explode"}});
      },
      ThrowsMessage<std::runtime_error>(
          AllOf(HasSubstr("invalid action 'explode'"), HasSubstr("fail_until:<n>"))));
}

TEST(Scripted, InvalidHeaderAction_IsDeadLettered) {
  const Result r = Harness::of<Scripted>().deliver(with_action("retry:soon"));
  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_THAT(r.reason, HasSubstr("'soon' is not a non-negative integer"));
}

TEST(Scripted, FailUntil_ThrowsBeforeThatAttemptThenAcks) {
  Harness harness = Harness::of<Scripted>();
  EXPECT_EQ(harness.deliver(with_action("fail_until:3", "m", 1)).kind, Result::Kind::retry);
  const Result second = harness.deliver(with_action("fail_until:3", "m", 2));
  EXPECT_EQ(second.kind, Result::Kind::retry);
  EXPECT_EQ(second.reason, "scripted failure until attempt 3 (this is attempt 2)");
  EXPECT_EQ(harness.deliver(with_action("fail_until:3", "m", 3)).kind, Result::Kind::ack);
}

TEST(Scripted, Publish_SendsTheSameBodyThenAcks_RoutingKeyMayHoldColons) {
  Harness harness = Harness::of<Scripted>();
  const Result r = harness.deliver(with_action("publish:livraria.eventos:a:b"));
  EXPECT_EQ(r.kind, Result::Kind::ack) << r;
  const auto published = harness.published();
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].exchange, "livraria.eventos");
  EXPECT_EQ(published[0].routing_key, "a:b");
  EXPECT_EQ(published[0].body, "payload");
}

TEST(Scripted, FailedPublish_PropagatesAndTheMessageIsRetried) {
  Harness harness = Harness::of<Scripted>();
  harness.fail_next_publish("no queue bound");
  const Result r = harness.deliver(with_action("publish::work"));
  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  EXPECT_EQ(r.exception_type, "warren::PublishError");
  EXPECT_EQ(r.reason, "no queue bound");
}

TEST(Scripted, AckIfFile_ThrowsUntilTheFileExists) {
  TempDir dir;
  const std::string fixed = dir / "bug-fixed";
  Harness harness = Harness::of<Scripted>();
  EXPECT_EQ(harness.deliver(with_action("ack_if_file:" + fixed)).kind, Result::Kind::retry);
  std::ofstream(fixed) << "";
  EXPECT_EQ(harness.deliver(with_action("ack_if_file:" + fixed)).kind, Result::Kind::ack);
}

TEST(Scripted, Sleep_IsNotCutShortByAStopRequest) {
  Harness harness = Harness::of<Scripted>();
  harness.request_stop();
  const auto started = std::chrono::steady_clock::now();

  const Result r = harness.deliver(with_action("sleep:120"));

  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(120));
  EXPECT_EQ(r.kind, Result::Kind::ack);
  EXPECT_THAT(harness.logs().back().text, HasSubstr("stop requested; sleeping on"));
}

TEST(Scripted, GateFile_HoldsTheCallAfterItsRecordLineUntilTheFileExists) {
  TempDir dir;
  const std::string record = dir / "calls.tsv";
  const std::string gate = dir / "release";
  Harness harness = Harness::of<Scripted>({{"record_file", record}, {"gate_file", gate}});

  auto call = std::async(std::launch::async,
                         [&] { return harness.deliver(with_action("dead_letter:held")); });
  struct Release {  // on every path, or a failed assertion would wait for the call's timeout
    std::string path;
    ~Release() { std::ofstream(path) << ""; }
  } release{gate};
  eventually([&] { return !read_file(record).empty(); }, std::chrono::seconds(30));
  ASSERT_EQ(read_file(record), "test-worker\tm-1\t1\t0\tdead_letter:held\n")
      << "the call has begun";
  // Absence can only be shown over a window: held for 200 ms, not released by itself.
  ASSERT_EQ(call.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the call returned before the gate file existed";
  std::ofstream(gate) << "";

  const Result r = call.get();
  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_EQ(r.reason, "held");
}

TEST(Scripted, RecordFile_HoldsOneTabSeparatedLinePerCall) {
  TempDir dir;
  const std::string record = dir / "calls.tsv";
  Harness harness = Harness::of<Scripted>({{"record_file", record}}, "emails");
  harness.deliver(with_action("", "m-1", 1));
  TestMessage redelivered = with_action("throw", "m-2", 2);
  redelivered.redelivered = true;
  harness.deliver(redelivered);

  EXPECT_EQ(read_file(record), "emails\tm-1\t1\t0\tack\nemails\tm-2\t2\t1\tthrow\n");
}

TEST(Scripted, RecordTime_AddsTheWallClockTimeOfTheCallAsASixthField) {
  TempDir dir;
  const std::string record = dir / "calls.tsv";
  Harness harness =
      Harness::of<Scripted>({{"record_file", record}, {"record_time", "true"}}, "emails");
  const auto before = std::chrono::system_clock::now();
  harness.deliver(with_action("", "m-1", 3));
  const auto after = std::chrono::system_clock::now();

  const std::string line = read_file(record);
  const std::string prefix = "emails\tm-1\t3\t0\tack\t";
  ASSERT_EQ(line.substr(0, prefix.size()), prefix) << line;
  ASSERT_EQ(line.back(), '\n') << line;
  const std::string stamp = line.substr(prefix.size(), line.size() - prefix.size() - 1);
  ASSERT_THAT(stamp, ::testing::MatchesRegex("[0-9]+\\.[0-9]{6}")) << line;
  const auto micros = std::stoll(stamp.substr(0, stamp.find('.'))) * 1000000 +
                      std::stoll(stamp.substr(stamp.find('.') + 1));
  const auto since_epoch = [](auto time) {
    return std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  };
  EXPECT_GE(micros, since_epoch(before));
  EXPECT_LE(micros, since_epoch(after));
}

TEST(Scripted, RecordTimeNotABoolean_FailsConstructionNamingTheSetting) {
  EXPECT_THAT(
      [] {
        Harness::of<Scripted>({{"record_time", "yes"}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("'record_time' must be true or false")));
}

TEST(ScriptedDeathTest, Abort_IsRecordedBeforeTheProcessDies) {
  TempDir dir;
  const std::string record = dir / "calls.tsv";
  EXPECT_DEATH(
      {
        Harness harness = Harness::of<Scripted>({{"record_file", record}}, "w");
        harness.deliver(with_action("abort", "m-9"));
      },
      "");
  EXPECT_EQ(read_file(record), "w\tm-9\t1\t0\tabort\n");
}

TEST(ScriptedDeathTest, Segfault_IsRecordedThenDiesOfSIGSEGV) {
  TempDir dir;
  const std::string record = dir / "calls.tsv";
  // Under ASan, its SEGV handler would report and exit 1: the death test runs without it.
  EXPECT_EXIT(
      {
        ::signal(SIGSEGV, SIG_DFL);
        Harness harness = Harness::of<Scripted>({{"record_file", record}}, "w");
        harness.deliver(with_action("segfault", "m-8"));
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EQ(read_file(record), "w\tm-8\t1\t0\tsegfault\n");
}

TEST(Scripted, HogAndSpin_AreActionsWithoutArguments) {
  // Only parsed here: performed, they take the process (see isolation's WorkerProcessFaults).
  EXPECT_EQ(ScriptedAction::parse("hog").kind, ScriptedAction::Kind::hog);
  EXPECT_EQ(ScriptedAction::parse("spin").kind, ScriptedAction::Kind::spin);
  EXPECT_THAT([] { ScriptedAction::parse("spin:5"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'spin' takes no argument")));
}

TEST(Scripted, InitActionThrow_FailsConstruction) {
  EXPECT_THAT(
      [] {
        Harness::of<Scripted>({{"init_action", "throw"}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("init_action = throw")));
}

TEST(Scripted, InitActionUnknown_FailsConstructionNamingTheChoices) {
  EXPECT_THAT(
      [] {
        Harness::of<Scripted>({{"init_action", "explode"}});
      },
      ThrowsMessage<std::runtime_error>(
          HasSubstr("'init_action' must be segfault, abort or throw, got 'explode'")));
}

TEST(Scripted, CrashEveryNotAPositiveInteger_FailsConstruction) {
  EXPECT_THAT(
      [] {
        Harness::of<Scripted>({{"crash_every", "0"}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("'crash_every' must be at least 1")));
  EXPECT_THAT(
      [] {
        Harness::of<Scripted>({{"crash_every", "ten"}});
      },
      ThrowsMessage<std::runtime_error>(
          HasSubstr("'crash_every' must be a non-negative integer, got 'ten'")));
}

TEST(CrashSchedule, EveryNthCallOfOneInstanceCrashes) {
  CrashSchedule every_third(3);
  std::vector<bool> crashes;
  for (int call = 1; call <= 7; ++call)
    crashes.push_back(every_third.crash_now());
  EXPECT_EQ(crashes, (std::vector<bool>{false, false, true, false, false, true, false}));
  // A new instance (a restarted worker process) counts from 0.
  CrashSchedule restarted(3);
  EXPECT_FALSE(restarted.crash_now());
  CrashSchedule every_call(1);
  EXPECT_TRUE(every_call.crash_now());
  EXPECT_TRUE(every_call.crash_now());
  CrashSchedule never(std::nullopt);
  for (int call = 1; call <= 100; ++call)
    ASSERT_FALSE(never.crash_now());
}

TEST(ScriptedDeathTest, InitActionSegfaultOrAbort_KillsTheConstructingProcess) {
  EXPECT_EXIT(
      {
        ::signal(SIGSEGV, SIG_DFL);  // as in Segfault_IsRecordedThenDiesOfSIGSEGV
        Harness::of<Scripted>({{"init_action", "segfault"}});
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(Harness::of<Scripted>({{"init_action", "abort"}}), ::testing::KilledBySignal(SIGABRT),
              "");
}

TEST(ScriptedDeathTest, CrashEvery_TheNthCallIsRecordedThenSegfaults) {
  TempDir dir;
  const std::string record = dir / "calls.tsv";
  EXPECT_EXIT(
      {
        ::signal(SIGSEGV, SIG_DFL);
        Harness harness =
            Harness::of<Scripted>({{"record_file", record}, {"crash_every", "2"}}, "w");
        if (harness.deliver(with_action("ack", "m-1")).kind == Result::Kind::ack)
          harness.deliver(with_action("ack", "m-2"));
        std::exit(0);  // not reached when the second call crashes
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EQ(read_file(record), "w\tm-1\t1\t0\tack\nw\tm-2\t1\t0\tack\n");
}

TEST(Scripted, BuiltSharedObject_BehavesLikeTheCompiledInHandler) {
  void* library = ::dlopen(WARREN_SCRIPTED_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << ::dlerror();
  const auto entry =
      reinterpret_cast<warren_plugin_entry_fn>(::dlsym(library, WARREN_PLUGIN_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr) << ::dlerror();
  {
    Harness harness(*entry(), {{"default_action", "permanent"}});
    EXPECT_STREQ(harness.descriptor().name, "scripted");

    const Result r = harness.deliver(with_action(""));

    EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
    EXPECT_EQ(r.exception_type, "warren::PermanentError");
  }
  // Never dlclose: nothing of a plugin may outlive its code (the host does not unload either).
}

}  // namespace
