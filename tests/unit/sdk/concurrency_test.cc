// The host runs handle() concurrently on one instance; so may the harness. Eight threads
// delivering at once must neither lose nor double anything the harness records.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

class Busy final : public warren::Handler {
 public:
  explicit Busy(warren::PluginContext& ctx) : handled_(ctx.counter("handled_total", "handled")) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override {
    ctx.scope().make<std::string>(msg.message_id());
    calls_.fetch_add(1);
    handled_.inc();
    ctx.log_info("handled");
    ctx.publish("out", "done", msg.body());
    return msg.attempt() % 2 == 0 ? warren::Outcome::retry() : warren::Outcome::ack();
  }
  static inline std::atomic<int> calls_{0};

 private:
  warren::Counter handled_;
};

TEST(Concurrency, EightThreadsDeliveringAtOnce_EveryCallIsCountedOnce) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  const int calls_before = Busy::calls_.load();  // a count that outlives each test
  Harness harness = Harness::of<Busy>();
  std::atomic<int> acks{0};
  std::atomic<int> retries{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        TestMessage m;
        m.message_id = std::to_string(t) + "-" + std::to_string(i);
        m.body = m.message_id;
        m.attempt = static_cast<std::uint32_t>(i % 2 + 1);
        const Result r = harness.deliver(m);
        (r.kind == Result::Kind::ack ? acks : retries).fetch_add(1);
      }
    });
  }
  for (auto& thread : threads)
    thread.join();

  constexpr int kTotal = kThreads * kPerThread;
  EXPECT_EQ(Busy::calls_.load() - calls_before, kTotal);
  EXPECT_EQ(acks.load(), kTotal / 2);
  EXPECT_EQ(retries.load(), kTotal / 2);
  EXPECT_EQ(harness.metrics().at("warren_plugin_handled_total").sum(), kTotal);
  EXPECT_EQ(harness.logs().size(), static_cast<std::size_t>(kTotal));
  EXPECT_EQ(harness.published().size(), static_cast<std::size_t>(kTotal));
  EXPECT_EQ(harness.live_scopes(), 0u);
}

}  // namespace
