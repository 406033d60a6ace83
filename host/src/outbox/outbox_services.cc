// See outbox_services.h.
#include "outbox/outbox_services.h"

#include "broker/broker_endpoint.h"
#include "broker/publisher_connection.h"
#include "broker/rabbitmq_transport.h"
#include "config/routing_table.h"
#include "observability/log.h"
#include "outbox/broker_row_publisher.h"
#include "outbox/outbox_relay.h"
#include "outbox/pg_inbox_store.h"
#include "outbox/pg_outbox_store.h"
#include "outbox/queue_row_publisher.h"
#include "queue/sqlite_outbox_relay.h"

namespace warren::outbox {

OutboxServices::OutboxServices(const config::Config& config, observability::Metrics& metrics,
                               observability::Health& health)
    : config_(config), metrics_(metrics), health_(health) {}

OutboxServices::~OutboxServices() {
  stop();
}

void OutboxServices::attach_inbox_stores(runtime::Host& host) {
  for (const config::WorkerConfig& worker : config_.workers) {
    if (!worker.idempotency)
      continue;
    PgInboxStoreOptions options;
    options.worker = worker.name;
    options.dsn = worker.idempotency->dsn;
    options.retention = worker.idempotency->retention;
    auto store = std::make_unique<PgInboxStore>(std::move(options));
    try {
      store->verify();
    } catch (const std::exception& e) {
      observability::log(observability::LogLevel::error,
                         observability::LogFields::for_worker(worker.name),
                         std::string("idempotency store: ") + e.what() +
                             "; until it works, messages are handled without the duplicate "
                             "check (at-least-once)");
    }
    host.set_duplicate_filter(worker.name, store.get());
    store->start_pruning();
    inbox_stores_.push_back(std::move(store));
  }
}

void OutboxServices::start_sqlite_relay(const config::OutboxConfig& outbox) {
  queue::SqliteOutboxOptions options;
  options.outbox = outbox.name;
  options.path = config_.broker.sqlite.path;
  options.synchronous_full = config_.broker.sqlite.synchronous_full;
  options.default_exchange = outbox.exchange;
  options.batch = outbox.batch;
  options.poll_interval = outbox.poll_interval;
  options.sent_retention = outbox.retention;
  options.busy_timeout = config_.broker.publish_timeout;
  auto relay = std::make_unique<queue::SqliteOutboxRelay>(
      std::move(options), config::routing_table(config_), &metrics_, &health_);
  relay->start();
  sqlite_relays_.push_back(std::move(relay));
}

OutboxRelayOptions OutboxServices::relay_options_for(const config::OutboxConfig& outbox) const {
  OutboxRelayOptions relay_options;
  relay_options.outbox = outbox.name;
  relay_options.default_exchange = outbox.exchange;
  relay_options.batch = outbox.batch;
  relay_options.poll_interval = outbox.poll_interval;
  relay_options.sent_retention = outbox.retention;
  relay_options.schedule =
      RetrySchedule(outbox.max_attempts, outbox.backoff_initial, outbox.backoff_max);
  relay_options.loop_allowance =
      config_.broker.publish_timeout + outbox.poll_interval + std::chrono::seconds(60);
  return relay_options;
}

void OutboxServices::start_queue_relay(const config::OutboxConfig& outbox) {
  // One lane: the publisher writes on that lane's connection, inside its batch's transaction.
  PgOutboxStoreOptions store_options;
  store_options.outbox = outbox.name;
  store_options.dsn = outbox.dsn;
  store_options.statement_timeout = std::chrono::seconds(30);
  auto store = std::make_unique<PgOutboxStore>(std::move(store_options));
  auto publisher = std::make_unique<QueueRowPublisher>(*store, config_.broker.postgres.schema);
  std::vector<std::unique_ptr<OutboxStore>> lanes;
  lanes.push_back(std::move(store));
  auto relay = std::make_unique<OutboxRelay>(relay_options_for(outbox), std::move(lanes),
                                             *publisher, &metrics_, &health_);
  relay->start();
  observability::log_info("outbox '" + outbox.name +
                          "': moving warren_outbox rows into the PostgreSQL queue (schema '" +
                          config_.broker.postgres.schema +
                          "') in the transaction that marks them sent (batch " +
                          std::to_string(outbox.batch) + ")");
  publishers_.push_back(std::move(publisher));
  relays_.push_back(std::move(relay));
}

void OutboxServices::start_relays() {
  if (config_.outboxes.empty())
    return;
  for (const config::OutboxConfig& outbox : config_.outboxes) {
    if (outbox.store == config::OutboxConfig::Store::sqlite) {
      start_sqlite_relay(outbox);
      continue;
    }
    if (config_.broker.transport == config::BrokerConfig::Transport::postgres) {
      start_queue_relay(outbox);
      continue;
    }
    if (config_.broker.transport != config::BrokerConfig::Transport::rabbitmq) {
      observability::log_error("outbox '" + outbox.name +
                               "': a PostgreSQL outbox is relayed to RabbitMQ or into the "
                               "PostgreSQL queue, and [broker] transport is neither: not started");
      continue;
    }
    broker::PublisherOptions publisher_options;
    publisher_options.endpoints = broker::resolve_endpoints(config_.broker);
    publisher_options.connection =
        broker::connection_options(config_.broker, "outbox " + outbox.name, config_.host.name);
    publisher_options.publish_timeout = config_.broker.publish_timeout;
    publisher_options.reconnect_initial = config_.broker.reconnect_initial;
    publisher_options.reconnect_max = config_.broker.reconnect_max;
    auto publisher =
        std::make_unique<BrokerRowPublisher>(std::make_unique<broker::PublisherConnection>(
            std::move(publisher_options), &metrics_, &health_));

    // A batch must never lose its row locks while it may still be publishing: the server-side
    // timeout is well past the longest wait for confirms.
    const auto publish_timeout = config_.broker.publish_timeout;
    std::vector<std::unique_ptr<OutboxStore>> lanes;
    for (int lane = 0; lane < kRelayLanes; ++lane) {
      PgOutboxStoreOptions store_options;
      store_options.outbox = outbox.name;
      store_options.dsn = outbox.dsn;
      store_options.idle_in_transaction_timeout = publish_timeout + std::chrono::seconds(30);
      store_options.statement_timeout = std::chrono::seconds(30);
      lanes.push_back(std::make_unique<PgOutboxStore>(std::move(store_options)));
    }

    OutboxRelayOptions relay_options = relay_options_for(outbox);
    auto relay = std::make_unique<OutboxRelay>(std::move(relay_options), std::move(lanes),
                                               *publisher, &metrics_, &health_);
    relay->start();
    observability::log_info("outbox '" + outbox.name + "': relaying warren_outbox rows to " +
                            (outbox.exchange.empty() ? std::string("the exchange each row names")
                                                     : "'" + outbox.exchange + "' by default") +
                            " (batch " + std::to_string(outbox.batch) + ")");
    publishers_.push_back(std::move(publisher));
    relays_.push_back(std::move(relay));
  }
}

void OutboxServices::stop() {
  for (auto& relay : sqlite_relays_)
    relay->stop();
  sqlite_relays_.clear();
  // Together, so that the rounds in progress end in parallel (each within publish_timeout);
  // then the publishers close, which is bounded even when a publish is stuck in the socket.
  for (auto& relay : relays_)
    relay->request_stop();
  for (auto& relay : relays_)
    relay->stop();
  relays_.clear();
  publishers_.clear();
  for (auto& store : inbox_stores_)
    store->stop_pruning();
}

}  // namespace warren::outbox
