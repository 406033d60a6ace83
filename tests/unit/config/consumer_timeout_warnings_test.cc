// The start-up warning when a worker's prefetched deliveries can stay unacknowledged longer than
// the broker's consumer_timeout ([broker] consumer_timeout, default 30m; [[workers]]
// max_handler_time), and the two keys themselves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "config_test_support.h"

namespace warren::config {
namespace {

using test::parse;
using test::problems_of;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A RabbitMQ config with `broker_keys`, and worker "slow" with `worker_keys` on queue "q" (no
// dead-letter exchange: it accepts the loss).
std::string on_rabbitmq(const std::string& broker_keys, const std::string& worker_keys) {
  return R"(
[broker]
uri = "amqp://guest@localhost/"
)" + broker_keys +
         R"(

[[queues]]
name = "q"
type = "classic"

[[workers]]
name = "slow"
plugin = "p"
queue = "q"
allow_message_loss = true
)" + worker_keys +
         "\n";
}

TEST(ConsumerTimeoutKeys, Defaults_ThirtyMinutesAndNoHandlerTime) {
  const Config config = parse(on_rabbitmq("", ""));
  EXPECT_EQ(config.broker.consumer_timeout, std::chrono::minutes(30));
  EXPECT_FALSE(config.workers.at(0).max_handler_time.has_value());
}

TEST(ConsumerTimeoutKeys, Set_AreRead) {
  const Config config =
      parse(on_rabbitmq("consumer_timeout = \"60s\"", "max_handler_time = \"5s\""));
  EXPECT_EQ(config.broker.consumer_timeout, std::chrono::seconds(60));
  EXPECT_EQ(config.workers.at(0).max_handler_time, std::chrono::seconds(5));
}

TEST(ConsumerTimeoutKeys, BrokerKeyWithSqlite_IsRefusedAsRabbitMqOnly) {
  const auto problems = problems_of(R"(
[broker]
transport = "sqlite"
consumer_timeout = "1m"
[broker.sqlite]
path = "/tmp/q.db"
)");
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_THAT(problems[0].message, HasSubstr("is a RabbitMQ setting"));
}

// The issue's case: consumer_timeout 60 s, prefetch 20, 5 s handlers, one at a time: the last
// prefetched delivery waits 100 s for its ack.
TEST(ConsumerTimeoutWarning, PrefetchTimesHandlerTimeOverTheTimeout_NamesWorkerProductAndLimit) {
  const auto warnings = config_warnings(
      parse(on_rabbitmq("consumer_timeout = \"60s\"", "prefetch = 20\nmax_handler_time = \"5s\"")));
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0],
              AllOf(HasSubstr("test.toml:10:1"), HasSubstr("worker \"slow\""),
                    HasSubstr("unacknowledged for 1m40s"),
                    HasSubstr("prefetch 20 over concurrency 1 is 20 handler call(s) of "
                              "max_handler_time 5s"),
                    HasSubstr("consumer_timeout of 1m"), HasSubstr("docs/operations.md")));
}

TEST(ConsumerTimeoutWarning, ConcurrencyShortensTheWait) {
  // ceil(20 / 8) = 3 calls of 5 s: 15 s, within 60 s.
  EXPECT_THAT(config_warnings(
                  parse(on_rabbitmq("consumer_timeout = \"60s\"",
                                    "prefetch = 20\nconcurrency = 8\nmax_handler_time = \"5s\""))),
              IsEmpty());
  // ceil(20 / 3) = 7 calls of 10 s: 70 s.
  const auto warnings = config_warnings(parse(on_rabbitmq(
      "consumer_timeout = \"60s\"", "prefetch = 20\nconcurrency = 3\nmax_handler_time = \"10s\"")));
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("unacknowledged for 1m10s"));
}

// With isolation = "process", `processes` children work at once and concurrency stays 1.
TEST(ConsumerTimeoutWarning, ProcessesShortenTheWaitAsConcurrencyDoes) {
  // ceil(20 / 8) = 3 calls of 5 s: 15 s, within 60 s.
  EXPECT_THAT(
      config_warnings(parse(on_rabbitmq("consumer_timeout = \"60s\"",
                                        "isolation = \"process\"\nprefetch = 20\nprocesses = 8\n"
                                        "max_handler_time = \"5s\""))),
      IsEmpty());
  // ceil(20 / 3) = 7 calls of 10 s: 70 s.
  const auto warnings =
      config_warnings(parse(on_rabbitmq("consumer_timeout = \"60s\"",
                                        "isolation = \"process\"\nprefetch = 20\nprocesses = 3\n"
                                        "max_handler_time = \"10s\"")));
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], AllOf(HasSubstr("unacknowledged for 1m10s"),
                                 HasSubstr("prefetch 20 over processes 3 is 7 handler call(s)"),
                                 HasSubstr("lower prefetch toward processes")));
}

TEST(ConsumerTimeoutWarning, ExactlyTheTimeout_IsFine) {
  EXPECT_THAT(config_warnings(parse(on_rabbitmq("consumer_timeout = \"60s\"",
                                                "prefetch = 12\nmax_handler_time = \"5s\""))),
              IsEmpty());
}

TEST(ConsumerTimeoutWarning, TheDefaultThirtyMinutes_AppliesWhenNotConfigured) {
  // 20 x 2 min = 40 min > 30 min.
  const auto warnings =
      config_warnings(parse(on_rabbitmq("", "prefetch = 20\nmax_handler_time = \"2m\"")));
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("consumer_timeout of 30m"));
  EXPECT_THAT(config_warnings(parse(on_rabbitmq("", "prefetch = 20\nmax_handler_time = \"1m\""))),
              IsEmpty());
}

TEST(ConsumerTimeoutWarning, WithoutMaxHandlerTime_NothingToCompare) {
  EXPECT_THAT(config_warnings(parse(on_rabbitmq("consumer_timeout = \"1s\"", "prefetch = 1000"))),
              IsEmpty());
}

TEST(ConsumerTimeoutWarning, OtherTransports_HaveNoConsumerTimeout) {
  EXPECT_THAT(config_warnings(parse(R"(
[broker]
transport = "memory"

[[queues]]
name = "q"
type = "classic"

[[workers]]
name = "slow"
plugin = "p"
queue = "q"
prefetch = 20
max_handler_time = "1h"
)")),
              IsEmpty());
}

}  // namespace
}  // namespace warren::config
