// [broker] transport = "sqlite": its [broker.sqlite] section, and the RabbitMQ-only keys that the
// table queue refuses where they are written (they would silently do nothing).
#include "config_test_support.h"

namespace warren::config {
namespace {

using test::parse;
using test::Problem;
using test::problems_of;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* environment_with_state_dir(const char* name) {
  return std::string_view(name) == "WARREN_STATE_DIR" ? "/srv/state" : nullptr;
}

TEST(SqliteTransportConfig, Defaults_FullSyncPollLeaseRetention) {
  const Config config = parse(R"(
[broker]
transport = "sqlite"
[broker.sqlite]
path = "/var/lib/warren/queue.db"
)");
  EXPECT_EQ(config.broker.transport, BrokerConfig::Transport::sqlite);
  EXPECT_EQ(config.broker.sqlite.path, "/var/lib/warren/queue.db");
  EXPECT_TRUE(config.broker.sqlite.synchronous_full);
  EXPECT_EQ(config.broker.sqlite.poll_interval, std::chrono::milliseconds(200));
  EXPECT_EQ(config.broker.sqlite.lease, std::chrono::minutes(5));
  EXPECT_EQ(config.broker.sqlite.retention, std::chrono::hours(1));
}

TEST(SqliteTransportConfig, EveryKeyAndTheStateDirectoryFromTheEnvironment) {
  LoadOptions options;
  options.environment = &environment_with_state_dir;
  const Config config = parse(R"(
[broker]
transport = "sqlite"
publish_timeout = "3s"
[broker.sqlite]
path = "${WARREN_STATE_DIR:-/var/lib/warren}/queue.db"
synchronous = "normal"
poll_interval = "50ms"
lease = "30s"
retention = "10m"
)",
                              options);
  EXPECT_EQ(config.broker.sqlite.path, "/srv/state/queue.db");
  EXPECT_FALSE(config.broker.sqlite.synchronous_full);
  EXPECT_EQ(config.broker.sqlite.poll_interval, std::chrono::milliseconds(50));
  EXPECT_EQ(config.broker.sqlite.lease, std::chrono::seconds(30));
  EXPECT_EQ(config.broker.sqlite.retention, std::chrono::minutes(10));
  EXPECT_EQ(config.broker.publish_timeout, std::chrono::seconds(3));
}

TEST(SqliteTransportConfig, MissingSectionOrPath_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
transport = "sqlite"
)"),
              ElementsAre(Problem(2, 1, "broker.sqlite", HasSubstr("missing [broker.sqlite]"))));
  EXPECT_THAT(problems_of(R"(
[broker]
transport = "sqlite"
[broker.sqlite]
synchronous = "off"
)"),
              ElementsAre(Problem(4, 1, "broker.sqlite.path", HasSubstr("missing required key")),
                          Problem(5, 15, "broker.sqlite.synchronous",
                                  HasSubstr("must be one of full, normal"))));
}

TEST(SqliteTransportConfig, RabbitMqKeysInBroker_AreRefusedWhereWritten) {
  EXPECT_THAT(problems_of(R"(
[broker]
transport = "sqlite"
uri = "amqp://localhost/"
heartbeat = "10s"
[broker.sqlite]
path = "/tmp/q.db"
)"),
              ElementsAre(Problem(4, 7, "broker.uri", HasSubstr("is a RabbitMQ setting")),
                          Problem(5, 13, "broker.heartbeat", HasSubstr("has no broker"))));
}

TEST(SqliteTransportConfig, SqliteSectionWithAnotherTransport_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
transport = "memory"
[broker.sqlite]
path = "/tmp/q.db"
)"),
              ElementsAre(Problem(4, 1, "broker.sqlite",
                                  HasSubstr("used only with transport = \"sqlite\""))));
}

TEST(SqliteTransportConfig,
     QueueAndWorkerRabbitMqKeys_AreRefusedAndQueuesNeedNoDeadLetterExchange) {
  EXPECT_THAT(
      problems_of(R"(
[broker]
transport = "sqlite"
[broker.sqlite]
path = "/tmp/q.db"

[[exchanges]]
name = "ev"
type = "topic"
durable = true

[[queues]]
name = "emails"
type = "quorum"
delivery_limit = 5
dead_letter_exchange = "ev"
bindings = [{ exchange = "ev", routing_key = "order.#" }]

[[workers]]
name = "emails"
plugin = "order_email"
queue = "emails"
dead_letter_queue = "emails.dlq"
)"),
      ElementsAre(
          Problem(10, 11, "exchanges[0].durable", HasSubstr("RabbitMQ setting")),
          Problem(14, 8, "queues[0].type", HasSubstr("RabbitMQ setting")),
          Problem(15, 18, "queues[0].delivery_limit", HasSubstr("has no broker")),
          Problem(16, 24, "queues[0].dead_letter_exchange", HasSubstr("`dead` in its own table")),
          Problem(23, 21, "workers[0].dead_letter_queue", HasSubstr("`dead` row of its queue"))));
}

TEST(SqliteTransportConfig, AQueueWithBindingsOnly_LoadsWithoutADeadLetterExchange) {
  const Config config = parse(R"(
[broker]
transport = "sqlite"
[broker.sqlite]
path = "/tmp/q.db"
[[exchanges]]
name = "ev"
type = "topic"
[[queues]]
name = "emails"
bindings = [{ exchange = "ev", routing_key = "order.#" }]
[[workers]]
name = "emails"
plugin = "order_email"
queue = "emails"
)");
  ASSERT_EQ(config.queues.size(), 1u);
  EXPECT_EQ(config.queues[0].bindings.size(), 1u);
}

TEST(SqliteTransportConfig, WorkerOnAQueueNotInTheFile_IsRefused) {
  EXPECT_THAT(
      problems_of(R"(
[broker]
transport = "sqlite"
[broker.sqlite]
path = "/tmp/q.db"
[[workers]]
name = "emails"
plugin = "order_email"
queue = "elsewhere"
)"),
      ElementsAre(Problem(9, 9, "workers[0].queue", HasSubstr("is not a [[queues]] entry"))));
}

}  // namespace
}  // namespace warren::config
