// See transport_factory.h.
#include "cli/transport_factory.h"

#include "broker/rabbitmq_transport.h"
#include "config/routing_table.h"
#include "queue/pg_transport.h"
#include "queue/sqlite_transport.h"
#include "runtime/in_memory_transport.h"

namespace warren::cli {

std::unique_ptr<transport::Transport> make_transport(const config::Config& config,
                                                     observability::Metrics& metrics,
                                                     observability::Health& health) {
  switch (config.broker.transport) {
    case config::BrokerConfig::Transport::memory:
      return std::make_unique<runtime::InMemoryTransport>(config, config.broker.publish_timeout);
    case config::BrokerConfig::Transport::rabbitmq:
      return std::make_unique<broker::RabbitMqTransport>(config, &metrics, &health);
    case config::BrokerConfig::Transport::sqlite: {
      const config::SqliteQueueConfig& sqlite = config.broker.sqlite;
      queue::SqliteQueueOptions options;
      options.path = sqlite.path;
      options.synchronous_full = sqlite.synchronous_full;
      options.poll_interval = sqlite.poll_interval;
      options.lease = sqlite.lease;
      options.retention = sqlite.retention;
      options.owner = queue::lease_owner_for(config.host.name);
      options.busy_timeout = config.broker.publish_timeout;
      return std::make_unique<queue::SqliteTransport>(options, config::routing_table(config),
                                                      &health, &metrics);
    }
    case config::BrokerConfig::Transport::postgres: {
      const config::PostgresQueueConfig& postgres = config.broker.postgres;
      queue::PgQueueOptions options;
      options.dsn = postgres.dsn;
      options.schema = postgres.schema;
      options.poll_interval = postgres.poll_interval;
      options.lease = postgres.lease;
      options.retention = postgres.retention;
      options.connect_timeout = config.broker.publish_timeout;
      options.owner = queue::lease_owner_for(config.host.name);
      return std::make_unique<queue::PgTransport>(options, config::routing_table(config), &health,
                                                  &metrics);
    }
  }
  throw transport::TransportError("unknown transport");
}

}  // namespace warren::cli
