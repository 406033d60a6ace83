// Specification of the transport's reading thread helping a dispatcher (issue 17): it runs
// handlers with the same permits as the dispatcher's threads (never more than `concurrency` at
// once, in order at concurrency 1), only while handlers are quick, and a drain waits for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eventually.h"
#include "fake_delivery.h"
#include "in_process_plugin.h"
#include "worker_under_test.h"

namespace warren::runtime {
namespace {

using test_support::eventually;
using testing_support::FakeDelivery;
using testing_support::InProcessPlugin;
using testing_support::SettlementLog;
using namespace std::chrono_literals;

constexpr auto kPatience = 60s;

// What the handler saw: messages in the order they began, on which thread, and how many ran at
// once at most. A message with body "hold" runs until the gate opens; "slow" runs 5 ms; "busy"
// keeps its thread busy for 100 µs (a handler that costs something, quick or not as told).
struct Seen {
  std::mutex mutex;
  std::condition_variable changed;
  bool gate_open = false;
  int running = 0;
  int most_running = 0;
  std::vector<std::string> order;
  std::vector<std::thread::id> threads;
};
Seen* g_seen = nullptr;

class Watched final : public warren::Handler {
 public:
  explicit Watched(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& message, warren::Context&) override {
    std::unique_lock lock(g_seen->mutex);
    ++g_seen->running;
    g_seen->most_running = std::max(g_seen->most_running, g_seen->running);
    g_seen->order.emplace_back(message.message_id());
    g_seen->threads.push_back(std::this_thread::get_id());
    g_seen->changed.notify_all();
    if (message.body() == "hold")
      g_seen->changed.wait(lock, [] { return g_seen->gate_open; });
    if (message.body() == "busy") {
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + 100us;
      while (std::chrono::steady_clock::now() < until) {
      }
      lock.lock();
    }
    if (message.body() == "slow") {
      lock.unlock();
      std::this_thread::sleep_for(5ms);  // the handler's own work, not a synchronisation
      lock.lock();
    }
    --g_seen->running;
    return warren::Outcome::ack();
  }
};

class DispatcherHelpTest : public ::testing::Test {
 protected:
  void SetUp() override { g_seen = &seen_; }
  void TearDown() override {
    open_gate();
    g_seen = nullptr;
  }

  // `quick_handler` an hour: every handler counts as quick, however slow this build makes it (an
  // instrumented one, ASan or TSan, takes tens of microseconds where the release takes one).
  WorkerUnderTest& worker(int concurrency, std::chrono::nanoseconds quick_handler = 1h,
                          std::chrono::nanoseconds helper_alone = 1h) {
    DispatcherOptions options = options_for("helped");
    options.concurrency = concurrency;
    options.quick_handler = quick_handler;
    options.helper_alone = helper_alone;
    // An idle thread that woke on its tick would take what the test hands the helper.
    options.idle_tick = std::chrono::hours(1);
    worker_.emplace(InProcessPlugin::of<Watched>("watched"), options);
    return *worker_;
  }
  std::vector<std::unique_ptr<transport::Delivery>> deliveries(
      const std::vector<std::pair<std::string, std::string>>& ids_and_bodies) {
    std::vector<std::unique_ptr<transport::Delivery>> made;
    for (const auto& [id, body] : ids_and_bodies)
      made.push_back(FakeDelivery::make(id, log_, body));
    return made;
  }
  // Gives the dispatcher's idle threads time to stop spinning and fall asleep, where only a
  // wake-up makes them take a delivery (their idle tick is an hour here). Whether a thread
  // sleeps cannot be observed, so this is a pause: without it an idle thread that has just
  // started may take what the test hands the helper.
  static void let_idle_threads_sleep() { std::this_thread::sleep_for(50ms); }
  bool wait_until_running(int count) {
    std::unique_lock lock(seen_.mutex);
    return seen_.changed.wait_for(lock, kPatience, [&] { return seen_.running >= count; });
  }
  // What the transport's reading thread does: enlists, then helps.
  static std::size_t help(WorkerUnderTest& running, const std::function<bool()>& enough) {
    return running.dispatcher.enlist_helper() ? running.dispatcher.help(enough) : 0;
  }
  void open_gate() {
    std::lock_guard lock(seen_.mutex);
    seen_.gate_open = true;
    seen_.changed.notify_all();
  }
  std::vector<std::string> settled_acks() const {
    std::vector<std::string> ids;
    for (const auto& [id, settlement] : log_.entries()) {
      if (settlement.kind == transport::Settlement::Kind::ack)
        ids.push_back(id);
    }
    return ids;
  }

  Seen seen_;
  SettlementLog log_;
  std::optional<WorkerUnderTest> worker_;
  const std::function<bool()> never_enough_ = [] { return false; };
};

TEST_F(DispatcherHelpTest, ConcurrencyOne_TheHelperWaitsForThePermitAndTheOrderHolds) {
  WorkerUnderTest& running = worker(1);
  running.dispatcher.deliver(FakeDelivery::make("0", log_, "hold"));
  ASSERT_TRUE(wait_until_running(1));  // a dispatcher thread holds the only permit

  auto later = deliveries({{"1", ""}, {"2", ""}, {"3", ""}});
  ASSERT_TRUE(running.dispatcher.deliver_all_to_helper(later));
  EXPECT_TRUE(later.empty());
  EXPECT_EQ(help(running, never_enough_), 0U);  // no permit: it runs nothing

  open_gate();
  ASSERT_TRUE(log_.wait_for_count(4, kPatience));
  EXPECT_EQ(settled_acks(), (std::vector<std::string>{"0", "1", "2", "3"}));
  std::lock_guard lock(seen_.mutex);
  EXPECT_EQ(seen_.order, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(seen_.most_running, 1);
}

TEST_F(DispatcherHelpTest, ConcurrencyTwo_TheHelperRunsOneBesideADispatcherThreadAndNoMore) {
  WorkerUnderTest& running = worker(2);
  running.dispatcher.deliver(FakeDelivery::make("held", log_, "hold"));
  ASSERT_TRUE(wait_until_running(1));
  let_idle_threads_sleep();

  auto quick = deliveries({{"a", ""}, {"b", ""}});
  ASSERT_TRUE(running.dispatcher.deliver_all_to_helper(quick));
  // The second permit is free: the helper runs both, one after the other, on this thread (the
  // idle dispatcher thread was not woken for them).
  EXPECT_EQ(help(running, never_enough_), 2U);
  {
    std::lock_guard lock(seen_.mutex);
    ASSERT_EQ(seen_.order, (std::vector<std::string>{"held", "a", "b"}));
    EXPECT_EQ(seen_.threads[1], std::this_thread::get_id());
    EXPECT_EQ(seen_.threads[2], std::this_thread::get_id());
    EXPECT_NE(seen_.threads[0], std::this_thread::get_id());
    EXPECT_EQ(seen_.most_running, 2);
  }
  EXPECT_EQ(settled_acks(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(running.dispatcher.in_flight(), 1U);

  open_gate();
  ASSERT_TRUE(log_.wait_for_count(3, kPatience));
  EXPECT_TRUE(eventually([&] { return running.dispatcher.in_flight() == 0; }, kPatience));
}

TEST_F(DispatcherHelpTest, EnoughBetweenTwo_TheRestGoesToTheDispatchersThreads) {
  WorkerUnderTest& running = worker(1);
  auto three = deliveries({{"1", ""}, {"2", ""}, {"3", ""}});
  ASSERT_TRUE(running.dispatcher.deliver_all_to_helper(three));
  EXPECT_EQ(help(running, [] { return true; }), 1U);
  // It woke the dispatcher's thread for the two it left.
  ASSERT_TRUE(log_.wait_for_count(3, kPatience));
  EXPECT_EQ(settled_acks(), (std::vector<std::string>{"1", "2", "3"}));
}

TEST_F(DispatcherHelpTest, SlowHandlers_AreLeftToTheDispatchersThreads) {
  WorkerUnderTest& running = worker(1, /*quick_handler=*/1ms);
  for (int i = 0; i < 3; ++i)
    running.dispatcher.deliver(FakeDelivery::make("slow" + std::to_string(i), log_, "slow"));
  ASSERT_TRUE(log_.wait_for_count(3, kPatience));

  auto next = deliveries({{"next", ""}});
  EXPECT_FALSE(running.dispatcher.deliver_all_to_helper(next));  // delivered the usual way
  EXPECT_TRUE(next.empty());
  ASSERT_TRUE(log_.wait_for_count(4, kPatience));
  std::lock_guard lock(seen_.mutex);
  EXPECT_NE(seen_.threads.back(), std::this_thread::get_id());
}

TEST_F(DispatcherHelpTest, ABacklogBeyondWhatTheHelperRunsAlone_WakesTheThreadsBesideIt) {
  // The helper runs alone what it gets through in 5 ms at the handlers' recent pace.
  WorkerUnderTest& running = worker(2, /*quick_handler=*/1h, /*helper_alone=*/5ms);
  // Teach the dispatcher the handler's pace: 100 µs, and its overhead.
  std::vector<std::unique_ptr<transport::Delivery>> warm_up;
  for (int i = 0; i < 40; ++i)
    warm_up.push_back(FakeDelivery::make("warm" + std::to_string(i), log_, "busy"));
  running.dispatcher.deliver_all(warm_up);
  ASSERT_TRUE(log_.wait_for_count(40, kPatience));
  let_idle_threads_sleep();

  // Under the line (4 × 100 µs and the overhead): the helper runs them all, the threads sleep.
  std::vector<std::unique_ptr<transport::Delivery>> few;
  for (int i = 0; i < 4; ++i)
    few.push_back(FakeDelivery::make("few" + std::to_string(i), log_, "busy"));
  ASSERT_TRUE(running.dispatcher.deliver_all_to_helper(few));
  EXPECT_EQ(help(running, never_enough_), 4U);

  // Beyond it (400 × at least 100 µs = 40 ms): the threads are woken and take a share.
  std::vector<std::unique_ptr<transport::Delivery>> many;
  for (int i = 0; i < 400; ++i)
    many.push_back(FakeDelivery::make("many" + std::to_string(i), log_, "busy"));
  ASSERT_TRUE(running.dispatcher.deliver_all_to_helper(many));
  const std::size_t helped = help(running, never_enough_);
  ASSERT_TRUE(log_.wait_for_count(444, kPatience));
  EXPECT_LT(helped, 400U);
  std::lock_guard lock(seen_.mutex);
  const auto on_this_thread =
      std::count(seen_.threads.begin() + 40, seen_.threads.end(), std::this_thread::get_id());
  EXPECT_EQ(static_cast<std::size_t>(on_this_thread), 4 + helped);
  EXPECT_LE(seen_.most_running, 2);  // the permits still hold
  EXPECT_EQ(settled_acks().size(), 444U);
}

TEST_F(DispatcherHelpTest, Drain_WaitsForAHandlerTheHelperRuns) {
  WorkerUnderTest& running = worker(1);
  let_idle_threads_sleep();
  auto held = deliveries({{"held", "hold"}});
  ASSERT_TRUE(running.dispatcher.deliver_all_to_helper(held));
  auto helper = std::async(std::launch::async, [&] { return help(running, never_enough_); });
  ASSERT_TRUE(wait_until_running(1));

  running.dispatcher.request_stop();
  EXPECT_FALSE(running.drain(100ms));  // the handler is still running
  auto after_stop = deliveries({{"late", ""}});
  EXPECT_FALSE(running.dispatcher.deliver_all_to_helper(after_stop));  // stopping: no help
  open_gate();
  EXPECT_TRUE(running.drain(kPatience));
  EXPECT_EQ(helper.get(), 1U);
  EXPECT_EQ(settled_acks(), (std::vector<std::string>{"held"}));
  EXPECT_EQ(running.dispatcher.in_flight(), 0U);
  EXPECT_FALSE(running.dispatcher.enlist_helper());  // drained: no helper counted in again
}

}  // namespace
}  // namespace warren::runtime
