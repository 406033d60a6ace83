// Specification of the dispatcher with a handler that runs in worker processes (issue 14), over a
// scripted HandlerRunner (no real process: tests/unit/isolation and the integration tests have
// those): a message whose process dies is run again in a fresh one, and dead-lettered at
// max_crashes with the death in its reason and x-warren-crashes; the messages beside it are
// handled once each; a worker whose processes cannot start gives back what it holds once the
// runner says crash loop. With a window (several messages sent ahead to one process), a death
// blames only the message the process was running; the others run exactly once in the next one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>

#include "eventually.h"
#include "fake_delivery.h"
#include "observability/metrics.h"
#include "runtime/dispatcher.h"
#include "runtime/handler_runner.h"

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::Pair;
using testing_support::FakeDelivery;
using testing_support::SettlementLog;

// "poison*" kills its process every time; "flaky*" kills it the first time only; "fatal*" kills
// it and puts the worker in a crash loop; anything else is acked. Counts calls and crashes per
// message; no lane can start while `broken`. With `window`, a lane holds what is submitted and
// runs it in order when awaited, as a worker process does; a death leaves the rest unrun and the
// lane refuses work (not_run) until ready_for_message() "starts" another process.
class ScriptedRunner final : public HandlerRunner {
 public:
  class Lane final : public HandlerLane {
   public:
    explicit Lane(ScriptedRunner& runner) : runner_(runner) {}
    bool ready_for_message(const std::atomic<bool>&) override {
      if (runner_.broken.load()) {
        std::this_thread::sleep_for(5ms);
        return false;
      }
      dead_ = false;
      return true;
    }
    std::optional<std::string> run(const warren_message&, const transport::InboundMessage& message,
                                   host_abi::MessageServices& services) override {
      return runner_.handle(message.message_id, services);
    }

    bool takes_a_window() const noexcept override { return runner_.window; }
    Ticket submit(const warren_message&, const transport::InboundMessage& message,
                  host_abi::MessageServices& services, bool report_at_once) override {
      runner_.note_submitted(message.message_id, report_at_once);
      const Ticket ticket = next_ticket_++;
      if (dead_)
        done_[ticket] = Awaited{Awaited::Kind::not_run, {}, {}};
      else
        queued_.push_back(Queued{ticket, message.message_id, &services});
      runner_.saw_in_flight(queued_.size());
      return ticket;
    }
    Awaited await(Ticket ticket) override {
      while (!done_.contains(ticket) && !queued_.empty()) {
        Queued head = queued_.front();
        queued_.pop_front();
        if (auto died = runner_.handle(head.id, *head.services)) {
          done_[head.ticket] = Awaited{Awaited::Kind::died, *died, {}};
          for (const Queued& behind : queued_)
            done_[behind.ticket] = Awaited{Awaited::Kind::not_run, {}, {}};
          queued_.clear();
          dead_ = true;
        } else {
          done_[head.ticket] = Awaited{};
        }
      }
      Awaited awaited = done_.at(ticket);
      done_.erase(ticket);
      return awaited;
    }

   private:
    struct Queued {
      Ticket ticket;
      std::string id;
      host_abi::MessageServices* services;
    };
    ScriptedRunner& runner_;
    std::deque<Queued> queued_;
    std::map<Ticket, Awaited> done_;
    Ticket next_ticket_ = 1;
    bool dead_ = false;
  };

  std::optional<std::string> handle(const std::string& id, host_abi::MessageServices& services) {
    const int call = called(id);
    if (id.starts_with("fatal")) {
      broken = true;
      crash_loop = true;
      return "SIGSEGV";
    }
    if (id.starts_with("poison") || (id.starts_with("flaky") && call == 1))
      return "SIGSEGV";
    host_abi::ReportedOutcome ack;
    ack.kind = host_abi::ReportedOutcome::Kind::ack;
    services.report(ack);
    return std::nullopt;
  }
  void saw_in_flight(std::size_t count) {
    std::size_t seen = most_in_flight.load();
    while (count > seen && !most_in_flight.compare_exchange_weak(seen, count)) {
    }
  }

  std::unique_ptr<HandlerLane> lane(std::size_t) override { return std::make_unique<Lane>(*this); }
  bool crash_looping() const noexcept override { return crash_loop.load(); }
  int count_crash(const CrashIdentity& identity) override {
    std::lock_guard lock(mutex_);
    return ++crashes_[identity.key];
  }
  void forget_crashes(const CrashIdentity& identity) override {
    std::lock_guard lock(mutex_);
    crashes_.erase(identity.key);
  }

  int called(const std::string& id) {
    std::lock_guard lock(mutex_);
    return ++calls_[id];
  }
  int calls(const std::string& id) {
    std::lock_guard lock(mutex_);
    return calls_[id];
  }
  // Each submission's report_at_once, by message id.
  void note_submitted(const std::string& id, bool report_at_once) {
    std::lock_guard lock(mutex_);
    submissions_[id].push_back(report_at_once);
  }
  std::map<std::string, std::vector<bool>> submissions() {
    std::lock_guard lock(mutex_);
    return submissions_;
  }
  std::size_t remembered_crashes() {
    std::lock_guard lock(mutex_);
    return crashes_.size();
  }

  std::atomic<bool> broken{false};
  std::atomic<bool> crash_loop{false};
  bool window = false;  // before the dispatcher starts
  std::atomic<std::size_t> most_in_flight{0};

 private:
  std::mutex mutex_;
  std::map<std::string, int> calls_;
  std::map<std::string, std::vector<bool>> submissions_;
  std::map<std::string, int> crashes_;
};

class ProcessDispatchTest : public ::testing::Test {
 protected:
  std::unique_ptr<Dispatcher> dispatcher() {
    DispatcherOptions options;
    options.worker = "w";
    options.queue = "q";
    options.concurrency = 3;
    options.prefetch = 30;  // a window of 10 per lane, if the lanes take one
    options.max_crashes = 3;
    auto dispatcher = std::make_unique<Dispatcher>(options, runner_, worker_, nullptr,
                                                   metrics_.worker("w", "q"), nullptr);
    dispatcher->set_crash_hooks({nullptr, 0, &metrics_.dead_lettered("w", "crash")});
    dispatcher->start();
    return dispatcher;
  }
  std::map<std::string, transport::Settlement> settled() const {
    std::map<std::string, transport::Settlement> by_id;
    for (auto& [id, settlement] : log_.entries()) {
      EXPECT_FALSE(by_id.count(id)) << id << " settled twice";
      by_id[id] = settlement;
    }
    return by_id;
  }

  observability::Metrics metrics_;
  WorkerContext worker_{"w", "scripted", {}, metrics_};
  ScriptedRunner runner_;
  SettlementLog log_;
};

TEST_F(ProcessDispatchTest, APoisonAmongGoodOnes_DeadLetteredAtMaxCrashesTheOthersHandledOnce) {
  auto workers = dispatcher();
  for (int i = 0; i < 20; ++i)
    workers->deliver(FakeDelivery::make(i == 7 ? "poison" : "good-" + std::to_string(i), log_));
  ASSERT_TRUE(log_.wait_for_count(20, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));

  const auto by_id = settled();
  ASSERT_EQ(by_id.size(), 20u);
  const transport::Settlement& dead = by_id.at("poison");
  EXPECT_EQ(dead.kind, transport::Settlement::Kind::dead_letter);
  EXPECT_EQ(dead.reason, "crash: SIGSEGV: its worker process died 3 times running this message");
  EXPECT_THAT(dead.extra_headers, Contains(Pair("x-warren-crashes", "3")));
  EXPECT_EQ(runner_.calls("poison"), 3) << "run max_crashes times, then never again";
  for (const auto& [id, settlement] : by_id) {
    if (id == "poison")
      continue;
    EXPECT_EQ(settlement.kind, transport::Settlement::Kind::ack) << id;
    EXPECT_EQ(runner_.calls(id), 1) << id << " handled once";
  }
  EXPECT_EQ(metrics_.dead_lettered("w", "crash").Value(), 1);
  EXPECT_EQ(runner_.remembered_crashes(), 0u) << "its count goes with the message";
}

TEST_F(ProcessDispatchTest, ACrashBelowMaxCrashes_RunsItAgainInAFreshProcessAndAcks) {
  auto workers = dispatcher();
  workers->deliver(FakeDelivery::make("flaky", log_));
  ASSERT_TRUE(log_.wait_for_count(1, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));
  EXPECT_EQ(settled().at("flaky").kind, transport::Settlement::Kind::ack);
  EXPECT_EQ(runner_.calls("flaky"), 2);
  EXPECT_EQ(runner_.remembered_crashes(), 0u);
}

TEST_F(ProcessDispatchTest, ACrashLoop_GivesBackEveryMessageItHolds) {
  runner_.broken = true;
  auto workers = dispatcher();
  for (int i = 0; i < 5; ++i)
    workers->deliver(FakeDelivery::make("held-" + std::to_string(i), log_));
  std::this_thread::sleep_for(50ms);  // let the threads find that no process can start
  EXPECT_TRUE(log_.entries().empty()) << "not given back before the crash loop";
  runner_.crash_loop = true;
  ASSERT_TRUE(log_.wait_for_count(5, 10s));
  for (const auto& [id, settlement] : settled())
    EXPECT_EQ(settlement.kind, transport::Settlement::Kind::requeue) << id;
  // Counted out of flight just after the settlement is logged.
  EXPECT_TRUE(test_support::eventually([&] { return workers->in_flight() == 0; }, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));
}

TEST_F(ProcessDispatchTest, AWindow_APoisonBlamesOnlyItself_TheOthersRunExactlyOnce) {
  runner_.window = true;
  auto workers = dispatcher();
  std::vector<std::unique_ptr<transport::Delivery>> deliveries;
  for (int i = 0; i < 60; ++i)
    deliveries.push_back(FakeDelivery::make(i == 7 ? "poison" : "good-" + std::to_string(i), log_));
  workers->deliver_all(deliveries);
  ASSERT_TRUE(log_.wait_for_count(60, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));

  EXPECT_GT(runner_.most_in_flight.load(), 1u) << "the lanes held several messages at once";
  const auto by_id = settled();
  ASSERT_EQ(by_id.size(), 60u);
  EXPECT_EQ(by_id.at("poison").kind, transport::Settlement::Kind::dead_letter);
  EXPECT_EQ(by_id.at("poison").reason,
            "crash: SIGSEGV: its worker process died 3 times running this message");
  EXPECT_EQ(runner_.calls("poison"), 3) << "blamed for its own deaths only";
  for (const auto& [id, settlement] : by_id) {
    if (id == "poison")
      continue;
    EXPECT_EQ(settlement.kind, transport::Settlement::Kind::ack) << id;
    EXPECT_EQ(runner_.calls(id), 1) << id << " run exactly once, though some were behind a death";
  }
  // Sent again after a death (the poison, and what was behind it), a message's outcome must come
  // back alone: a child that holds outcomes to send them together would otherwise lose them to a
  // SIGKILL and have the host blame the wrong one.
  std::size_t sent_again = 0;
  for (const auto& [id, flags] : runner_.submissions()) {
    ASSERT_FALSE(flags.empty()) << id;
    EXPECT_FALSE(flags.front()) << id << ": its first submission follows no death";
    for (std::size_t i = 1; i < flags.size(); ++i, ++sent_again)
      EXPECT_TRUE(flags[i]) << id << " submission " << i + 1 << " follows a death";
  }
  EXPECT_GE(sent_again, 2u) << "the poison at least was sent again twice";
  EXPECT_EQ(metrics_.dead_lettered("w", "crash").Value(), 1);
  EXPECT_EQ(runner_.remembered_crashes(), 0u);
}

TEST_F(ProcessDispatchTest, AWindow_ACrashLoopGivesBackWhatWasSentAndWhatWasNot) {
  runner_.window = true;
  auto workers = dispatcher();
  std::vector<std::unique_ptr<transport::Delivery>> deliveries;
  for (int i = 0; i < 40; ++i)
    deliveries.push_back(FakeDelivery::make(i == 12 ? "fatal" : "held-" + std::to_string(i), log_));
  workers->deliver_all(deliveries);
  ASSERT_TRUE(log_.wait_for_count(40, 10s));
  const auto by_id = settled();
  ASSERT_EQ(by_id.size(), 40u) << "each settled exactly once";
  for (const auto& [id, settlement] : by_id) {
    if (settlement.kind == transport::Settlement::Kind::ack)
      EXPECT_EQ(runner_.calls(id), 1) << id;
    else
      EXPECT_EQ(settlement.kind, transport::Settlement::Kind::requeue) << id;
  }
  EXPECT_EQ(by_id.at("fatal").kind, transport::Settlement::Kind::requeue);
  EXPECT_TRUE(test_support::eventually([&] { return workers->in_flight() == 0; }, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));
}

// Messages that come one at a time: a window begun with one waits a moment for those behind it
// (window_gathering.h); each is still run and settled exactly once.
TEST_F(ProcessDispatchTest, AWindow_MessagesComingOneByOne_EachRunAndAckedOnce) {
  runner_.window = true;
  auto workers = dispatcher();
  for (int i = 0; i < 120; ++i)
    workers->deliver(FakeDelivery::make("trickle-" + std::to_string(i), log_));
  ASSERT_TRUE(log_.wait_for_count(120, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));
  const auto by_id = settled();
  ASSERT_EQ(by_id.size(), 120u);
  for (const auto& [id, settlement] : by_id) {
    EXPECT_EQ(settlement.kind, transport::Settlement::Kind::ack) << id;
    EXPECT_EQ(runner_.calls(id), 1) << id;
  }
  EXPECT_EQ(workers->in_flight(), 0u);
}

TEST_F(ProcessDispatchTest, AWindow_ADrainSettlesEverythingOnce) {
  runner_.window = true;
  auto workers = dispatcher();
  std::vector<std::unique_ptr<transport::Delivery>> deliveries;
  for (int i = 0; i < 200; ++i)
    deliveries.push_back(FakeDelivery::make("m-" + std::to_string(i), log_));
  workers->deliver_all(deliveries);
  workers->request_stop();
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));
  const auto by_id = settled();
  ASSERT_EQ(by_id.size(), 200u) << "run (acked) or given back, each once";
  for (const auto& [id, settlement] : by_id) {
    if (settlement.kind == transport::Settlement::Kind::ack)
      EXPECT_EQ(runner_.calls(id), 1) << id;
    else
      EXPECT_EQ(settlement.kind, transport::Settlement::Kind::requeue) << id;
  }
  EXPECT_EQ(workers->in_flight(), 0u);
}

}  // namespace
}  // namespace warren::runtime
