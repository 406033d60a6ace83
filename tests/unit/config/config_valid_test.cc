// Valid configurations: a full file loads into the expected values, and what is left out takes
// the documented defaults.
#include <unistd.h>

#include <chrono>
#include <climits>

#include "config_test_support.h"

namespace warren::config {
namespace {

using namespace std::chrono_literals;
using test::TempFile;
using ::testing::ElementsAre;
using ::testing::Pair;

std::string full_config(const std::string& metrics_password_file,
                        const std::string& broker_password_file, const std::string& key_file) {
  return R"(
[host]
name = "livraria-worker-1"
plugin_dir = "/opt/warren/plugins"
shutdown_timeout = "45s"

[log]
level = "debug"
format = "json"

[metrics]
enabled = true
listen = "0.0.0.0:9500"
user = "prom"
password_file = ")" +
         metrics_password_file + R"("

[broker]
transport = "rabbitmq"
hosts = ["amqp://guest@127.0.0.1:5672/", "amqps://guest@b.example:5671/livraria"]
vhost = "/"
user = "warren"
password_file = ")" +
         broker_password_file + R"("
heartbeat = "20s"
connect_timeout = "5s"
publish_timeout = "3s"
reconnect_initial = "250ms"
reconnect_max = "1m"
ca_file = "/etc/warren/ca.pem"
cert_file = "/etc/warren/client.pem"
key_file = ")" +
         key_file + R"("

[[exchanges]]
name = "livraria.eventos"
type = "topic"
durable = true
auto_delete = false
arguments = { "alternate-exchange" = "livraria.naoroteadas" }

[[exchanges]]
name = "livraria.mortas"
type = "fanout"

[[exchanges]]
name = "livraria.naoroteadas"
type = "fanout"
durable = false
auto_delete = true

[[exchanges]]
name = "h"
type = "headers"

[[queues]]
name = "livraria.emails"
type = "quorum"
durable = true
exclusive = false
auto_delete = false
dead_letter_exchange = "livraria.mortas"
dead_letter_routing_key = "emails"
delivery_limit = 15
dead_letter_strategy = "at-least-once"
message_ttl = "10m"
max_length = 100000
overflow = "reject-publish"
allow_message_loss = false
bindings = [ { exchange = "livraria.eventos", routing_key = "pedido.registrado" },
             { exchange = "h", arguments = { "x-match" = "all", "kind" = "order" } } ]
arguments = { "x-queue-leader-locator" = "balanced", "x-max-priority" = 10 }

[[queues]]
name = "replica"
type = "classic"
durable = false
exclusive = true
auto_delete = true
server_named = true
bindings = [ { exchange = "livraria.eventos", routing_key = "#" } ]

[[workers]]
name = "emails"
plugin = "order_email"
queue = "livraria.emails"
prefetch = 20
concurrency = 4
retry = { max_attempts = 7, backoff = "fixed", initial = "2s", max = "10m", jitter = 0.5, immediate = 2 }
dead_letter_exchange = ""
dead_letter_queue = "livraria.emails.dlq"
idempotency = { store = "postgres", dsn = "postgresql:///livraria", retention = "3d" }
[workers.settings]
out_dir = "/var/lib/warren/emails"
max_size = 1048576
ratio = 0.25
dry_run = false

[[workers]]
name = "ranking"
plugin = "sales_ranking"
queue = "replica"
allow_message_loss = true

[[outbox]]
name = "orders"
dsn = "postgresql:///livraria"
exchange = "livraria.eventos"
batch = 50
poll_interval = "250ms"
max_attempts = 3
backoff = { initial = "2s", max = "1m" }
)";
}

class FullConfig : public ::testing::Test {
 protected:
  TempFile metrics_password_{"metrics-secret\n"};
  TempFile broker_password_{"broker-secret\r\n"};
  TempFile client_key_{"-----BEGIN PRIVATE KEY-----\n"};  // only its permissions are checked
  std::string text_ =
      full_config(metrics_password_.str(), broker_password_.str(), client_key_.str());
  Config config_ = test::parse(text_);
};

TEST_F(FullConfig, HostLogAndMetrics_HoldTheValuesWritten) {
  EXPECT_EQ(config_.file, "test.toml");
  EXPECT_EQ(config_.host.name, "livraria-worker-1");
  EXPECT_EQ(config_.host.plugin_dir, "/opt/warren/plugins");
  EXPECT_EQ(config_.host.shutdown_timeout, 45s);
  EXPECT_EQ(config_.log.level, "debug");
  EXPECT_EQ(config_.log.format, LogConfig::Format::json);
  EXPECT_TRUE(config_.metrics.enabled);
  EXPECT_EQ(config_.metrics.listen, "0.0.0.0:9500");
  EXPECT_EQ(config_.metrics.user, "prom");
  EXPECT_EQ(config_.metrics.password_file, metrics_password_.path());
  EXPECT_EQ(config_.metrics.password, "metrics-secret");
}

TEST_F(FullConfig, Broker_HoldsTheValuesWrittenAndThePasswordFromItsFile) {
  const BrokerConfig& broker = config_.broker;
  EXPECT_EQ(broker.transport, BrokerConfig::Transport::rabbitmq);
  EXPECT_THAT(broker.uris,
              ElementsAre("amqp://guest@127.0.0.1:5672/", "amqps://guest@b.example:5671/livraria"));
  EXPECT_EQ(broker.vhost, "/");
  EXPECT_EQ(broker.user, "warren");
  EXPECT_EQ(broker.password, "broker-secret");
  EXPECT_FALSE(broker.password_in_uri);
  EXPECT_EQ(broker.heartbeat, 20s);
  EXPECT_EQ(broker.connect_timeout, 5s);
  EXPECT_EQ(broker.publish_timeout, 3s);
  EXPECT_EQ(broker.reconnect_initial, 250ms);
  EXPECT_EQ(broker.reconnect_max, 1min);
  EXPECT_EQ(broker.tls.ca_file, "/etc/warren/ca.pem");
  EXPECT_EQ(broker.tls.cert_file, "/etc/warren/client.pem");
  EXPECT_EQ(broker.tls.key_file, client_key_.path());
}

TEST_F(FullConfig, Exchanges_HoldTheirTypesFlagsArgumentsAndPlace) {
  ASSERT_EQ(config_.exchanges.size(), 4u);
  const ExchangeConfig& events = config_.exchanges[0];
  EXPECT_EQ(events.name, "livraria.eventos");
  EXPECT_EQ(events.type, ExchangeType::topic);
  EXPECT_TRUE(events.durable);
  EXPECT_FALSE(events.auto_delete);
  EXPECT_THAT(events.arguments,
              ElementsAre(Pair("alternate-exchange", ArgumentValue("livraria.naoroteadas"))));
  EXPECT_EQ(events.where.file, "test.toml");
  EXPECT_EQ(events.where.line, test::line_of(text_, "[[exchanges]]"));
  EXPECT_EQ(config_.exchanges[1].type, ExchangeType::fanout);
  EXPECT_FALSE(config_.exchanges[2].durable);
  EXPECT_TRUE(config_.exchanges[2].auto_delete);
  EXPECT_EQ(config_.exchanges[3].type, ExchangeType::headers);
  EXPECT_EQ(config_.find_exchange("h"), &config_.exchanges[3]);
  EXPECT_EQ(config_.find_exchange("nope"), nullptr);
}

TEST_F(FullConfig, QuorumQueue_HoldsEveryKeyWritten) {
  const QueueConfig* emails = config_.find_queue("livraria.emails");
  ASSERT_NE(emails, nullptr);
  EXPECT_EQ(emails->type, QueueType::quorum);
  EXPECT_TRUE(emails->durable);
  EXPECT_FALSE(emails->exclusive);
  EXPECT_FALSE(emails->auto_delete);
  EXPECT_FALSE(emails->server_named);
  EXPECT_EQ(emails->dead_letter_exchange, "livraria.mortas");
  EXPECT_EQ(emails->dead_letter_routing_key, "emails");
  EXPECT_EQ(emails->delivery_limit, 15);
  EXPECT_EQ(emails->dead_letter_strategy, "at-least-once");
  EXPECT_EQ(emails->message_ttl, Duration(10min));
  EXPECT_EQ(emails->max_length, 100000);
  EXPECT_EQ(emails->overflow, "reject-publish");
  EXPECT_FALSE(emails->allow_message_loss);
  ASSERT_EQ(emails->bindings.size(), 2u);
  EXPECT_EQ(emails->bindings[0].exchange, "livraria.eventos");
  EXPECT_EQ(emails->bindings[0].routing_key, "pedido.registrado");
  EXPECT_TRUE(emails->bindings[0].arguments.empty());
  EXPECT_EQ(emails->bindings[1].exchange, "h");
  EXPECT_EQ(emails->bindings[1].routing_key, "");
  EXPECT_THAT(emails->bindings[1].arguments, ElementsAre(Pair("kind", ArgumentValue("order")),
                                                         Pair("x-match", ArgumentValue("all"))));
  EXPECT_THAT(emails->arguments,
              ElementsAre(Pair("x-max-priority", ArgumentValue(std::int64_t{10})),
                          Pair("x-queue-leader-locator", ArgumentValue("balanced"))));
  EXPECT_EQ(emails->where.line, test::line_of(text_, "[[queues]]"));
}

TEST_F(FullConfig, ServerNamedQueue_IsAnExclusiveClassicQueue) {
  const QueueConfig* replica = config_.find_queue("replica");
  ASSERT_NE(replica, nullptr);
  EXPECT_EQ(replica->type, QueueType::classic);
  EXPECT_FALSE(replica->durable);
  EXPECT_TRUE(replica->exclusive);
  EXPECT_TRUE(replica->auto_delete);
  EXPECT_TRUE(replica->server_named);
  EXPECT_EQ(replica->delivery_limit, std::nullopt);
  EXPECT_EQ(config_.find_queue("nope"), nullptr);
}

TEST_F(FullConfig, Worker_HoldsRetryIdempotencyDeadLetteringAndSettingsAsStrings) {
  const WorkerConfig* emails = config_.find_worker("emails");
  ASSERT_NE(emails, nullptr);
  EXPECT_EQ(emails->plugin, "order_email");
  EXPECT_EQ(emails->queue, "livraria.emails");
  EXPECT_EQ(emails->prefetch, 20);
  EXPECT_EQ(emails->concurrency, 4);
  EXPECT_EQ(emails->retry.max_attempts, 7);
  EXPECT_EQ(emails->retry.backoff, RetryPolicy::Backoff::fixed);
  EXPECT_EQ(emails->retry.initial, 2s);
  EXPECT_EQ(emails->retry.max, 10min);
  EXPECT_DOUBLE_EQ(emails->retry.jitter, 0.5);
  EXPECT_EQ(emails->retry.immediate, 2);
  EXPECT_EQ(emails->dead_letter_exchange, "");
  EXPECT_EQ(emails->dead_letter_queue, "livraria.emails.dlq");
  EXPECT_FALSE(emails->allow_message_loss);
  ASSERT_TRUE(emails->idempotency.has_value());
  EXPECT_EQ(emails->idempotency->store, "postgres");
  EXPECT_EQ(emails->idempotency->dsn, "postgresql:///livraria");
  EXPECT_EQ(emails->idempotency->retention, 3 * 24h);
  EXPECT_THAT(emails->settings,
              ElementsAre(Pair("dry_run", "false"), Pair("max_size", "1048576"),
                          Pair("out_dir", "/var/lib/warren/emails"), Pair("ratio", "0.25")));
  EXPECT_EQ(emails->where.line, test::line_of(text_, "[[workers]]"));
  EXPECT_EQ(config_.find_worker("ranking")->queue, "replica");
  EXPECT_TRUE(config_.find_worker("ranking")->allow_message_loss);
  EXPECT_EQ(config_.find_worker("ranking")->where.line, test::line_of(text_, "[[workers]]", 2));
  EXPECT_EQ(config_.find_worker("nope"), nullptr);
}

TEST_F(FullConfig, Outbox_HoldsTheValuesWritten) {
  ASSERT_EQ(config_.outboxes.size(), 1u);
  const OutboxConfig& orders = config_.outboxes[0];
  EXPECT_EQ(orders.name, "orders");
  EXPECT_EQ(orders.dsn, "postgresql:///livraria");
  EXPECT_EQ(orders.exchange, "livraria.eventos");
  EXPECT_EQ(orders.batch, 50);
  EXPECT_EQ(orders.poll_interval, 250ms);
  EXPECT_EQ(orders.max_attempts, 3);
  EXPECT_EQ(orders.backoff_initial, 2s);
  EXPECT_EQ(orders.backoff_max, 1min);
}

TEST_F(FullConfig, HasNoWarnings) {
  EXPECT_TRUE(config_warnings(config_).empty());
}

TEST(Defaults, EmptySectionsAndMemoryBroker_TakeTheDocumentedDefaults) {
  const Config config = test::parse(R"(
[broker]
transport = "memory"
)");
  char hostname[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(::gethostname(hostname, sizeof hostname - 1), 0);
  EXPECT_EQ(config.host.name, hostname);
  EXPECT_EQ(config.host.plugin_dir, "/usr/lib/warren/plugins");
  EXPECT_EQ(config.host.shutdown_timeout, 30s);
  EXPECT_EQ(config.log.level, "info");
  EXPECT_EQ(config.log.format, LogConfig::Format::text);
  EXPECT_TRUE(config.metrics.enabled);
  EXPECT_EQ(config.metrics.listen, "127.0.0.1:9464");
  EXPECT_EQ(config.metrics.user, "");
  EXPECT_EQ(config.broker.transport, BrokerConfig::Transport::memory);
  EXPECT_TRUE(config.broker.uris.empty());
  EXPECT_EQ(config.broker.password, "");
  EXPECT_EQ(config.broker.heartbeat, 30s);
  EXPECT_EQ(config.broker.connect_timeout, 10s);
  EXPECT_EQ(config.broker.publish_timeout, 10s);
  EXPECT_EQ(config.broker.reconnect_initial, 500ms);
  EXPECT_EQ(config.broker.reconnect_max, 10s);
  EXPECT_TRUE(config.exchanges.empty());
  EXPECT_TRUE(config.queues.empty());
  EXPECT_TRUE(config.workers.empty());
  EXPECT_TRUE(config.outboxes.empty());
}

TEST(Defaults, QueueWorkerAndOutboxWithOnlyRequiredKeys_TakeTheDocumentedDefaults) {
  const Config config = test::parse(R"(
[[exchanges]]
name = "dlx"
type = "fanout"

[[queues]]
name = "q"
dead_letter_exchange = "dlx"

[[workers]]
name = "w"
plugin = "p"
queue = "q"
idempotency = { dsn = "postgresql:///x" }

[[outbox]]
name = "o"
dsn = "postgresql:///x"
)");
  const QueueConfig& queue = config.queues.at(0);
  EXPECT_EQ(queue.type, QueueType::quorum);
  EXPECT_TRUE(queue.durable);
  EXPECT_FALSE(queue.exclusive);
  EXPECT_FALSE(queue.auto_delete);
  EXPECT_FALSE(queue.server_named);
  EXPECT_EQ(queue.delivery_limit, std::nullopt);  // the broker code applies 20
  EXPECT_EQ(queue.message_ttl, std::nullopt);
  EXPECT_EQ(queue.max_length, std::nullopt);
  EXPECT_EQ(queue.overflow, "");
  EXPECT_EQ(queue.dead_letter_strategy, "");

  const WorkerConfig& worker = config.workers.at(0);
  EXPECT_EQ(worker.prefetch, 20);
  EXPECT_EQ(worker.concurrency, 1);
  EXPECT_EQ(worker.retry.max_attempts, 5);
  EXPECT_EQ(worker.retry.backoff, RetryPolicy::Backoff::exponential);
  EXPECT_EQ(worker.retry.initial, 1s);
  EXPECT_EQ(worker.retry.max, 5min);
  EXPECT_DOUBLE_EQ(worker.retry.jitter, 0.2);
  EXPECT_EQ(worker.retry.immediate, 0);
  EXPECT_TRUE(worker.settings.empty());
  ASSERT_TRUE(worker.idempotency.has_value());
  EXPECT_EQ(worker.idempotency->store, "postgres");
  EXPECT_EQ(worker.idempotency->retention, 7 * 24h);

  const OutboxConfig& outbox = config.outboxes.at(0);
  EXPECT_EQ(outbox.exchange, "");
  EXPECT_EQ(outbox.batch, 100);
  EXPECT_EQ(outbox.poll_interval, 1s);
  EXPECT_EQ(outbox.max_attempts, 10);
  EXPECT_EQ(outbox.backoff_initial, 1s);
  EXPECT_EQ(outbox.backoff_max, 5min);
  EXPECT_EQ(outbox.retention, 7 * 24h);
}

TEST(Defaults, NoWorkers_IsAValidHostRunningOnlyOutboxRelays) {
  const Config config = test::parse(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
)");
  EXPECT_TRUE(config.workers.empty());
  EXPECT_EQ(config.outboxes.size(), 1u);
}

}  // namespace
}  // namespace warren::config
