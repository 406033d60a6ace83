// warren-worker as the host will run it: spawned with its socket, the scripted test plugin
// loaded from the Start frame, messages answered with outcomes, and every way a handler can
// take its process down seen from outside as an end of stream and a named reason.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "children_die_of_signals.h"
#include "isolation/worker_spawn.h"
#include "plugin/held_plugin_file.h"

namespace warren::isolation {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 20s;  // generous: sanitizer builds start slowly on a loaded machine

// The next frame of type T, playing the host's part meanwhile: a metric declaration is
// accepted, log lines and metric records pass by. Any other frame is an error.
template <typename T>
T expect_frame(SpawnedWorker& worker) {
  while (true) {
    auto frame = worker.socket().receive_within(kWait);
    if (!frame)
      throw std::runtime_error("no frame: " + worker.socket().closed_reason());
    if (std::holds_alternative<T>(*frame))
      return std::get<T>(*frame);
    if (auto* declare = std::get_if<MetricDeclare>(&*frame)) {
      if (!worker.socket().send(MetricDeclared{declare->metric, ""}, kWait))
        throw std::runtime_error("cannot answer a metric declaration");
      continue;
    }
    if (std::holds_alternative<LogLine>(*frame) || std::holds_alternative<MetricRecord>(*frame))
      continue;
    throw std::runtime_error("got a " + std::string(frame_name(*frame)) + " frame");
  }
}

// The scripted test plugin as a host holds it for its children.
int scripted_plugin_fd() {
  static const std::filesystem::path file = WARREN_SCRIPTED_PLUGIN_PATH;
  static const plugin::HeldPluginFile held(file.parent_path(), file);
  return held.fd();
}

SpawnedWorker spawn(int plugin_fd = scripted_plugin_fd()) {
  static const bool prepared = (let_children_die_of_signals(), true);
  (void)prepared;
  static HeldExecutable executable(WARREN_WORKER_PATH);
  return spawn_worker(executable, {std::to_string(::getpid())}, plugin_fd);
}

Start start_frame(std::map<std::string, std::string> settings = {}) {
  return Start{kProtocolVersion,    "orders",       WARREN_SCRIPTED_PLUGIN_PATH,
               std::move(settings), LogLevel::info, "scripted"};
}

SpawnedWorker ready_worker(std::map<std::string, std::string> settings = {}) {
  SpawnedWorker worker = spawn();
  EXPECT_TRUE(worker.socket().send(start_frame(std::move(settings)), kWait));
  Hello hello = expect_frame<Hello>(worker);
  EXPECT_EQ(hello.plugin_name, "scripted");
  EXPECT_EQ(hello.protocol, kProtocolVersion);
  expect_frame<Ready>(worker);
  return worker;
}

Deliver message(std::uint64_t sequence, const std::string& action) {
  return Deliver{sequence,
                 "body",
                 "rk",
                 "ex",
                 "id-" + std::to_string(sequence),
                 "text/plain",
                 1,
                 false,
                 {{"x-test-action", action}}};
}

host_abi::ReportedOutcome outcome_of(SpawnedWorker& worker, std::uint64_t sequence) {
  Outcome outcome = expect_frame<Outcome>(worker);
  EXPECT_EQ(outcome.sequence, sequence);
  return outcome.outcome;
}

TEST(WorkerProcess, OutcomesComeBackInOrder) {
  SpawnedWorker worker = ready_worker();
  ASSERT_TRUE(worker.socket().send(message(1, "ack"), kWait));
  ASSERT_TRUE(worker.socket().send(message(2, "dead_letter:no such customer"), kWait));
  ASSERT_TRUE(worker.socket().send(message(3, "retry:250"), kWait));
  ASSERT_TRUE(worker.socket().send(message(4, "throw"), kWait));
  EXPECT_EQ(outcome_of(worker, 1).kind, host_abi::ReportedOutcome::Kind::ack);
  auto dead = outcome_of(worker, 2);
  EXPECT_EQ(dead.kind, host_abi::ReportedOutcome::Kind::dead_letter);
  EXPECT_EQ(dead.reason, "no such customer");
  auto retried = outcome_of(worker, 3);
  EXPECT_EQ(retried.kind, host_abi::ReportedOutcome::Kind::retry);
  EXPECT_EQ(retried.delay, 250ms);
  auto thrown = outcome_of(worker, 4);
  EXPECT_EQ(thrown.error, host_abi::HandlerError::std_exception);
  EXPECT_EQ(thrown.reason, "scripted failure");
  ASSERT_TRUE(worker.socket().send(Shutdown{}, kWait));
  EXPECT_EQ(worker.reap_within(kWait)->reason(), "exit 0");
}

TEST(WorkerProcess, APublishGoesThroughTheHostAndWaitsForItsAnswer) {
  SpawnedWorker worker = ready_worker();
  ASSERT_TRUE(worker.socket().send(message(1, "publish:audit:order.seen"), kWait));
  PublishRequest request = expect_frame<PublishRequest>(worker);
  EXPECT_EQ(request.sequence, 1u);
  EXPECT_EQ(request.message.exchange, "audit");
  EXPECT_EQ(request.message.routing_key, "order.seen");
  EXPECT_EQ(request.message.body, "body");
  EXPECT_TRUE(request.message.mandatory);
  ASSERT_TRUE(worker.socket().send(PublishResult{request.request, std::nullopt}, kWait));
  EXPECT_EQ(outcome_of(worker, 1).kind, host_abi::ReportedOutcome::Kind::ack);
  // A refused publish reaches the handler as its error (scripted throws it: a retry).
  ASSERT_TRUE(worker.socket().send(message(2, "publish:audit:order.seen"), kWait));
  request = expect_frame<PublishRequest>(worker);
  ASSERT_TRUE(worker.socket().send(PublishResult{request.request, "unroutable"}, kWait));
  auto refused = outcome_of(worker, 2);
  EXPECT_TRUE(refused.threw());
  EXPECT_NE(refused.reason.find("unroutable"), std::string::npos) << refused.reason;
}

TEST(WorkerProcess, APingIsAnsweredWhileAHandlerRuns) {
  SpawnedWorker worker = ready_worker();
  ASSERT_TRUE(worker.socket().send(message(1, "sleep:400"), kWait));
  ASSERT_TRUE(worker.socket().send(Ping{77}, kWait));
  EXPECT_EQ(expect_frame<Pong>(worker), Pong{77});  // before the outcome: expect_frame would throw
  EXPECT_EQ(outcome_of(worker, 1).kind, host_abi::ReportedOutcome::Kind::ack);
}

TEST(WorkerProcess, ASegfaultOrAbortEndsTheStreamAndIsNamed) {
  for (auto [action, reason] : {std::pair{"segfault", "SIGSEGV"}, std::pair{"abort", "SIGABRT"}}) {
    SpawnedWorker worker = ready_worker();
    ASSERT_TRUE(worker.socket().send(message(1, action), kWait));
    // Buffered, never answered; or refused, when the child is already dead: either is right.
    (void)worker.socket().send(message(2, "ack"), kWait);
    EXPECT_THROW(expect_frame<Outcome>(worker), std::runtime_error) << action;
    EXPECT_EQ(worker.socket().closed_reason().substr(0, 13), "end of stream");
    EXPECT_EQ(worker.reap_within(kWait)->reason(), reason);
  }
}

TEST(WorkerProcess, AFailingInit_IsInitFailedWithItsReason) {
  SpawnedWorker worker = spawn();
  ASSERT_TRUE(worker.socket().send(start_frame({{"sleep_ms", "soon"}}), kWait));
  expect_frame<Hello>(worker);
  InitFailed failed = expect_frame<InitFailed>(worker);
  EXPECT_NE(failed.reason.find("'sleep_ms' must be a non-negative integer"), std::string::npos)
      << failed.reason;
  EXPECT_EQ(worker.reap_within(kWait)->reason(), "exit 78");
}

TEST(WorkerProcess, APluginThatCannotLoad_IsInitFailedNamingTheFile) {
  SpawnedWorker worker = spawn(-1);  // no plugin at descriptor 4
  Start start = start_frame();
  start.plugin_path = "/nonexistent/libscripted.so";
  ASSERT_TRUE(worker.socket().send(start, kWait));
  InitFailed failed = expect_frame<InitFailed>(worker);
  EXPECT_NE(failed.reason.find("/nonexistent/libscripted.so"), std::string::npos) << failed.reason;
}

TEST(WorkerProcess, AnotherProtocolVersion_IsRefused) {
  SpawnedWorker worker = spawn();
  Start start = start_frame();
  start.protocol = kProtocolVersion + 1;
  ASSERT_TRUE(worker.socket().send(start, kWait));
  InitFailed failed = expect_frame<InitFailed>(worker);
  EXPECT_NE(failed.reason.find("different packages"), std::string::npos) << failed.reason;
}

TEST(WorkerProcess, TheHostGone_TheWorkerEnds) {
  SpawnedWorker worker = ready_worker();
  ::shutdown(worker.socket().fd(), SHUT_RDWR);
  EXPECT_EQ(worker.reap_within(kWait)->reason(), "exit 0");
}

}  // namespace
}  // namespace warren::isolation
