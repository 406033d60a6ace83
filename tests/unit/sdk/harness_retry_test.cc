// Harness::deliver_until_settled: one message through a worker's retry policy, attempt after
// attempt, with the host's decisions, delays, headers and dead-letter reasons.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "host_config.h"
#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::RetryPolicy;
using warren::testing::SettledMessage;
using warren::testing::TestMessage;

class AlwaysThrows final : public warren::Handler {
 public:
  explicit AlwaysThrows(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    throw std::runtime_error("database unreachable");
  }
};

// Throws on attempts 1 and 2; acks attempt 3. Logs the x-warren-attempt header it was given.
class SucceedsOnAttemptThree final : public warren::Handler {
 public:
  explicit SucceedsOnAttemptThree(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override {
    const auto header = msg.header("x-warren-attempt");
    ctx.log_info("attempt " + std::to_string(msg.attempt()) + ", header " +
                 (header ? std::string(*header) : std::string("absent")));
    if (msg.attempt() < 3)
      throw std::runtime_error("not yet");
    return warren::Outcome::ack();
  }
};

class Permanent final : public warren::Handler {
 public:
  explicit Permanent(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message&, warren::Context&) override {
    throw warren::PermanentError("bad json");
  }
};

RetryPolicy exponential(int max_attempts) {
  RetryPolicy policy;
  policy.max_attempts = max_attempts;
  policy.initial = milliseconds(1000);
  policy.max = milliseconds(3000);
  return policy;
}

std::vector<milliseconds> delays_of(const SettledMessage& settled) {
  std::vector<milliseconds> delays;
  for (const auto& attempt : settled.attempts) {
    if (attempt.delay)
      delays.push_back(*attempt.delay);
  }
  return delays;
}

TEST(HarnessRetry, HandlerAlwaysThrowing_IsDeadLetteredAfterMaxAttemptsWithTheHostsReason) {
  Harness harness = Harness::of<AlwaysThrows>();

  const SettledMessage settled = harness.deliver_until_settled(TestMessage{}, exponential(4));

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::dead_lettered) << settled;
  ASSERT_EQ(settled.attempts.size(), 4u) << settled;
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(settled.attempts[i].number, i + 1);
    EXPECT_EQ(settled.attempts[i].result.kind, Result::Kind::retry);
  }
  EXPECT_EQ(settled.reason, "gave up after 4 attempts: std::runtime_error: database unreachable");
  // Exponential from 1 s, capped at 3 s; none after the last attempt.
  EXPECT_THAT(delays_of(settled),
              ::testing::ElementsAre(milliseconds(1000), milliseconds(2000), milliseconds(3000)));
}

TEST(HarnessRetry, HandlerSucceedingOnAttemptThree_IsAckedWithThreeResults) {
  Harness harness = Harness::of<SucceedsOnAttemptThree>();

  const SettledMessage settled = harness.deliver_until_settled(TestMessage{}, exponential(5));

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::acked) << settled;
  ASSERT_EQ(settled.attempts.size(), 3u) << settled;
  EXPECT_EQ(settled.attempts[2].result.kind, Result::Kind::ack);
  // Attempts 2 and 3 came back as the broker-delayed copies the host publishes.
  const auto logs = harness.logs();
  ASSERT_EQ(logs.size(), 3u);
  EXPECT_EQ(logs[0].text, "attempt 1, header absent");
  EXPECT_EQ(logs[1].text, "attempt 2, header 2");
  EXPECT_EQ(logs[2].text, "attempt 3, header 3");
}

TEST(HarnessRetry, PermanentError_IsDeadLetteredAtOnceWithItsType) {
  Harness harness = Harness::of<Permanent>();

  const SettledMessage settled = harness.deliver_until_settled(TestMessage{}, exponential(5));

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::dead_lettered);
  EXPECT_EQ(settled.attempts.size(), 1u);
  EXPECT_EQ(settled.reason, "warren::PermanentError: bad json");
}

TEST(HarnessRetry, CapOnDeliveries_LeavesItRetryingWithTheNextAttemptAndDelay) {
  Harness harness = Harness::of<AlwaysThrows>();

  const SettledMessage settled = harness.deliver_until_settled(TestMessage{}, exponential(10), 2);

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::retrying) << settled;
  EXPECT_EQ(settled.attempts.size(), 2u);
  EXPECT_EQ(settled.next_attempt, 3u);
  EXPECT_EQ(settled.next_delay, milliseconds(2000));
}

TEST(HarnessRetry, ImmediateRetries_RunAgainAtOnceBeforeBrokerDelayedOnes) {
  Harness harness = Harness::of<SucceedsOnAttemptThree>();
  RetryPolicy policy = exponential(5);
  policy.immediate = 1;

  const SettledMessage settled = harness.deliver_until_settled(TestMessage{}, policy);

  ASSERT_EQ(settled.attempts.size(), 3u) << settled;
  EXPECT_TRUE(settled.attempts[0].run_again_now);
  EXPECT_EQ(settled.attempts[1].delay, milliseconds(1000)) << "the first broker-delayed retry";
  EXPECT_EQ(harness.logs()[1].text, "attempt 2, header absent") << "the same message, in process";
}

constexpr const char* kWorkerConfig = R"(
[broker]
transport = "memory"

[[queues]]
name = "work"
allow_message_loss = true

[[workers]]
name = "emails"
plugin = "emails"
queue = "work"
retry = { max_attempts = 3, backoff = "fixed", initial = "250ms" }
)";

TEST(HarnessRetry, PolicyFromTheConfiguration_IsTheWorkersOwn) {
  Harness harness = Harness::of<AlwaysThrows>({}, "emails");
  harness.use_config_text(kWorkerConfig);

  const SettledMessage settled = harness.deliver_until_settled(TestMessage{});

  EXPECT_EQ(settled.disposition, SettledMessage::Disposition::dead_lettered) << settled;
  EXPECT_EQ(settled.attempts.size(), 3u);
  EXPECT_THAT(delays_of(settled), ::testing::ElementsAre(milliseconds(250), milliseconds(250)));
}

TEST(HarnessRetry, PolicyOfAWorkerTheConfigurationLacks_IsRefusedNamingItsWorkers) {
  Harness harness = Harness::of<AlwaysThrows>({}, "emial");
  harness.use_config_text(kWorkerConfig);
  EXPECT_THAT([&] { harness.deliver_until_settled(TestMessage{}); },
              ThrowsMessage<std::logic_error>(
                  AllOf(HasSubstr("no worker 'emial'"), HasSubstr("'emails'"))));
}

TEST(HarnessRetry, DefaultPolicy_IsTheHostsDefault) {
  const warren::config::RetryPolicy host;
  const warren::config::RetryPolicy harness = warren::testing::to_host(RetryPolicy{});
  EXPECT_EQ(harness.max_attempts, host.max_attempts);
  EXPECT_EQ(harness.backoff, host.backoff);
  EXPECT_EQ(harness.initial, host.initial);
  EXPECT_EQ(harness.max, host.max);
  EXPECT_EQ(harness.jitter, host.jitter);
  EXPECT_EQ(harness.immediate, host.immediate);
}

}  // namespace
