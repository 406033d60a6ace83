// WorkerProcess with a window of several messages in flight to one child: the child runs them in
// order, each frame reaches the services of its own message, and a death blames only the message
// the child was running (the first unanswered one); the others never ran and run exactly once in
// the next child. Timeouts are the running message's, counted from when it began to run.
#include <gtest/gtest.h>
#include <signal.h>

#include <array>

#include "isolation/worker_process.h"
#include "worker_process_fakes.h"

namespace warren::isolation {
namespace {

using namespace std::chrono_literals;
using namespace warren::isolation::test_host;
using Kind = WorkerProcess::Awaited::Kind;

WorkerProcess::Ticket submit(WorkerProcess& process, const Message& message,
                             FakeMessage& services) {
  return process.submit(message.view(), message.headers, services);
}

// Sends every message at once, a window as deep as the array.
template <std::size_t N>
std::array<WorkerProcess::Ticket, N> submit_all(WorkerProcess& process,
                                                const std::array<Message, N>& messages,
                                                std::array<FakeMessage, N>& services) {
  std::array<WorkerProcess::Ticket, N> tickets{};
  for (std::size_t i = 0; i < N; ++i)
    tickets[i] = submit(process, messages[i], services[i]);
  return tickets;
}

// Awaits every ticket of a window whose child died running the one at CULPRIT: those before it
// ran, it died of REASON, those after it never ran.
template <std::size_t N>
void expect_death_at(WorkerProcess& process, const std::array<WorkerProcess::Ticket, N>& tickets,
                     std::size_t culprit, const std::string& reason) {
  for (std::size_t i = 0; i < culprit; ++i)
    EXPECT_EQ(process.await(tickets[i]).kind, Kind::ran) << i << ": its outcome was not lost";
  const auto died = process.await(tickets[culprit]);
  EXPECT_EQ(died.kind, Kind::died);
  EXPECT_EQ(died.reason, reason);
  for (std::size_t i = culprit + 1; i < N; ++i)
    EXPECT_EQ(process.await(tickets[i]).kind, Kind::not_run) << i;
}

TEST(WorkerProcessWindow, ACrashWithFourInFlight_BlamesTheFirstUnanswered_TheRestRunOnceInTheNext) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options(), worker);
  process.start();
  const pid_t first_child = process.pid();
  const std::array<Message, 4> messages = {with_action("ack"), with_action("segfault"),
                                           with_action("ack"), with_action("retry:100")};
  std::array<FakeMessage, 4> services;
  auto tickets = submit_all(process, messages, services);
  EXPECT_EQ(process.in_flight(), 4u);

  EXPECT_EQ(process.await(tickets[0]).kind, Kind::ran);
  auto culprit = process.await(tickets[1]);
  EXPECT_EQ(culprit.kind, Kind::died);
  EXPECT_EQ(culprit.reason, "SIGSEGV");
  EXPECT_EQ(process.await(tickets[2]).kind, Kind::not_run);
  EXPECT_EQ(process.await(tickets[3]).kind, Kind::not_run);
  EXPECT_EQ(process.in_flight(), 0u);
  EXPECT_FALSE(process.running());

  // The two that never ran go to a fresh child as they are.
  EXPECT_EQ(process.await(submit(process, messages[2], services[2])).kind, Kind::not_run)
      << "no child running: start() one first";
  process.start();
  tickets[2] = submit(process, messages[2], services[2]);
  tickets[3] = submit(process, messages[3], services[3]);
  EXPECT_NE(process.pid(), first_child);
  EXPECT_EQ(process.await(tickets[2]).kind, Kind::ran);
  EXPECT_EQ(process.await(tickets[3]).kind, Kind::ran);
  // Each ran exactly once (one outcome each), the culprit never answered.
  EXPECT_EQ(services[0].outcomes.size(), 1u);
  EXPECT_EQ(services[1].outcomes.size(), 0u);
  ASSERT_EQ(services[2].outcomes.size(), 1u);
  ASSERT_EQ(services[3].outcomes.size(), 1u);
  EXPECT_EQ(services[2].outcomes[0].kind, host_abi::ReportedOutcome::Kind::ack);
  EXPECT_EQ(services[3].outcomes[0].delay, 100ms);
}

TEST(WorkerProcessWindow, AChildKilledFromOutsideMidWindow_BlamesTheRunningOneOnly) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options(), worker);
  process.start();
  std::array<Message, 3> messages = {with_action("sleep:30000"), with_action("ack"),
                                     with_action("ack")};
  std::array<FakeMessage, 3> services;
  auto tickets = submit_all(process, messages, services);
  ::kill(process.pid(), SIGKILL);
  // Awaited out of order: the last first.
  EXPECT_EQ(process.await(tickets[2]).kind, Kind::not_run);
  auto culprit = process.await(tickets[0]);
  EXPECT_EQ(culprit.kind, Kind::died);
  EXPECT_EQ(culprit.reason, "killed");
  EXPECT_EQ(process.await(tickets[1]).kind, Kind::not_run);
  process.start();
  for (std::size_t i = 1; i < messages.size(); ++i)
    EXPECT_EQ(process.await(submit(process, messages[i], services[i])).kind, Kind::ran);
  EXPECT_EQ(services[0].outcomes.size(), 0u);
  EXPECT_EQ(services[1].outcomes.size(), 1u);
  EXPECT_EQ(services[2].outcomes.size(), 1u);
}

TEST(WorkerProcessWindow, InterleavedMessages_OutcomesAndPublishesReachTheirOwnMessage) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options(), worker);
  process.start();
  std::array<Message, 4> messages = {with_action("publish:audit:one"), with_action("retry:250"),
                                     with_action("publish:billing:two"),
                                     with_action("dead_letter:no such customer")};
  std::array<FakeMessage, 4> services;
  services[2].publish_error = "unroutable";  // reaches the third handler only
  auto tickets = submit_all(process, messages, services);
  // The last awaited first: everything before it is served on the way, each to its own message.
  EXPECT_EQ(process.await(tickets[3]).kind, Kind::ran);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(process.await(tickets[i]).kind, Kind::ran) << i;

  ASSERT_EQ(services[0].published.size(), 1u);
  EXPECT_EQ(services[0].published[0].routing_key, "one");
  ASSERT_EQ(services[0].outcomes.size(), 1u);
  EXPECT_EQ(services[0].outcomes[0].kind, host_abi::ReportedOutcome::Kind::ack);
  EXPECT_TRUE(services[1].published.empty());
  ASSERT_EQ(services[1].outcomes.size(), 1u);
  EXPECT_EQ(services[1].outcomes[0].delay, 250ms);
  ASSERT_EQ(services[2].published.size(), 1u);
  EXPECT_EQ(services[2].published[0].routing_key, "two");
  ASSERT_EQ(services[2].outcomes.size(), 1u);
  EXPECT_TRUE(services[2].outcomes[0].threw());  // its publish was refused: scripted throws
  EXPECT_TRUE(services[3].published.empty());
  ASSERT_EQ(services[3].outcomes.size(), 1u);
  EXPECT_EQ(services[3].outcomes[0].reason, "no such customer");
}

TEST(WorkerProcessWindow, AHardTimeoutWithAFullWindow_KillsForTheRunningMessageOnly) {
  FakeWorker worker;
  WorkerProcessOptions timed = options();
  timed.hard_timeout = 500ms;
  WorkerProcess process(worker_binary(), timed, worker);
  process.start();
  // Three of 200 ms each: sent at once, the third ends 600 ms after its send, but each runs for
  // 200 ms from its predecessor's outcome, under the limit. Then one that overruns it.
  std::array<Message, 5> messages = {with_action("sleep:200"), with_action("sleep:200"),
                                     with_action("sleep:200"), with_action("sleep:30000"),
                                     with_action("ack")};
  std::array<FakeMessage, 5> services;
  expect_death_at(process, submit_all(process, messages, services), 3, "timeout");
  EXPECT_EQ(services[4].outcomes.size(), 0u);
}

TEST(WorkerProcessWindow, ASoftTimeoutWithAFullWindow_CancelsTheRunningMessageOnly) {
  FakeWorker worker;
  WorkerProcessOptions timed = options();
  timed.soft_timeout = 150ms;
  WorkerProcess process(worker_binary(), timed, worker);
  process.start();
  // The scripted sleep logs once when it sees stop_requested(): only the first overruns.
  std::array<Message, 3> messages = {with_action("sleep:500"), with_action("sleep:50"),
                                     with_action("sleep:50")};
  std::array<FakeMessage, 3> services;
  auto tickets = submit_all(process, messages, services);
  for (std::size_t i = 0; i < messages.size(); ++i)
    EXPECT_EQ(process.await(tickets[i]).kind, Kind::ran) << i;
  auto saw_stop = [](const FakeMessage& message) {
    return std::any_of(message.lines.begin(), message.lines.end(), [](const std::string& line) {
      return line.find("stop requested") != std::string::npos;
    });
  };
  EXPECT_TRUE(saw_stop(services[0]));
  EXPECT_FALSE(saw_stop(services[1]));
  EXPECT_FALSE(saw_stop(services[2]));
}

// A child that runs fast handlers while more wait holds their outcomes to send them together
// (isolation/worker/held_frames.h). Whatever it holds must still reach the host: here in order,
// each once, with the run time the child measured.
TEST(WorkerProcessWindow, FortyFastMessagesInOneWindow_EachOutcomeReachesItsMessageOnce) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options(), worker);
  process.start();
  std::array<Message, 40> messages;
  messages.fill(with_action("ack"));
  std::array<FakeMessage, 40> services;
  auto tickets = submit_all(process, messages, services);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto awaited = process.await(tickets[i]);
    EXPECT_EQ(awaited.kind, Kind::ran) << i;
    EXPECT_GT(awaited.ran_for.count(), 0) << i << ": measured by the child";
    EXPECT_LT(awaited.ran_for, 1s) << i;
    ASSERT_EQ(services[i].outcomes.size(), 1u) << i;
    EXPECT_EQ(services[i].outcomes[0].kind, host_abi::ReportedOutcome::Kind::ack) << i;
  }
  EXPECT_TRUE(process.running());
}

// Outcomes held behind a handler that then runs long are sent by the child's watcher, not kept
// until it returns: here the slow one is killed at hard_timeout (a SIGKILL: the child can send
// nothing then), and the fast ones before it must have been heard as run, not blamed.
TEST(WorkerProcessWindow, FastMessagesThenAHang_TheirHeldOutcomesArriveBeforeTheKill) {
  FakeWorker worker;
  WorkerProcessOptions timed = options();
  timed.hard_timeout = 1s;
  WorkerProcess process(worker_binary(), timed, worker);
  process.start();
  std::array<Message, 8> messages;
  messages.fill(with_action("ack"));
  messages[6] = with_action("sleep:30000");
  std::array<FakeMessage, 8> services;
  expect_death_at(process, submit_all(process, messages, services), 6, "timeout");
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_EQ(services[i].outcomes.size(), 1u) << i;
}

// After a handler that ran long, the child's watcher has the socket and may sit in recv() with
// nothing more to come: an outcome held then could not leave before the next hang is killed. So
// the fast message after the slow one is reported at once, and is not the one blamed.
TEST(WorkerProcessWindow, AFastMessageAfterASlowOne_IsNotHeldWhileTheWatcherReads) {
  FakeWorker worker;
  WorkerProcessOptions timed = options();
  timed.hard_timeout = 600ms;
  WorkerProcess process(worker_binary(), timed, worker);
  process.start();
  std::array<Message, 6> messages = {with_action("sleep:150"),   with_action("ack"),
                                     with_action("sleep:30000"), with_action("ack"),
                                     with_action("ack"),         with_action("ack")};
  std::array<FakeMessage, 6> services;
  // The second one's outcome was sent, not held: it ran, and the hang behind it is blamed.
  expect_death_at(process, submit_all(process, messages, services), 2, "timeout");
}

// A fatal signal in a handler sends what the child held (its handler), so the host blames the
// crashing message and hears the ones before it as run: none of them runs twice.
TEST(WorkerProcessWindow, FastMessagesThenASegfault_TheHeldOutcomesAreSentByTheSignalHandler) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options(), worker);
  process.start();
  std::array<Message, 12> messages;
  messages.fill(with_action("ack"));
  messages[8] = with_action("segfault");
  std::array<FakeMessage, 12> services;
  // The signal still kills the child, and is named.
  expect_death_at(process, submit_all(process, messages, services), 8, "SIGSEGV");
}

}  // namespace
}  // namespace warren::isolation
