// `warren topology apply -c FILE [--dry-run]`: declares the config's exchanges, queues,
// bindings and retry delay levels, idempotently, and reports a conflict with what exists; on the
// SQLite queue, creates the database file and its schema.
#include <iostream>

#include "broker/amqp_connection.h"
#include "broker/amqp_errors.h"
#include "broker/rabbitmq_transport.h"
#include "broker/topology.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/queue_database.h"
#include "config/routing_table.h"
#include "postgres/pg_connection.h"
#include "queue/pg_queue_routing.h"
#include "queue/pg_queue_schema.h"
#include "queue/sqlite_connection.h"
#include "queue/sqlite_schema.h"

namespace warren::cli {
namespace {

// The SQLite queue: its file and schema; exchanges, queues and bindings live in the config and
// route in-process, so there is nothing else to declare.
int apply_sqlite_schema(const config::Config& config, bool dry_run) {
  const auto& path = config.broker.sqlite.path;
  if (dry_run) {
    std::cout << "would create, where missing, the queue database " << path << " (schema version "
              << queue::kSqliteQueueSchemaVersion << ": warren_queue, warren_outbox)\n";
    return kExitOk;
  }
  try {
    queue::SqliteOpenOptions open;
    open.path = path;
    queue::SqliteConnection connection(open);
    queue::ensure_sqlite_schema(connection);
  } catch (const queue::SqliteError& error) {
    std::cerr << error.what() << "\n";
    return kExitRuntimeFailure;
  }
  std::cout << "queue database " << path << " ready (schema version "
            << queue::kSqliteQueueSchemaVersion << "); queues:";
  for (const auto& queue : config.queues)
    std::cout << " " << queue.name;
  std::cout << "\n";
  return kExitOk;
}

std::string routing_summary(const queue::PgRoutingCounts& counts) {
  return std::to_string(counts.queues) + " queue(s), " + std::to_string(counts.exchanges) +
         " exchange(s), " + std::to_string(counts.bindings) + " binding(s)";
}

// The PostgreSQL queue: its schema, and the config's routing in the routing tables, where
// warren_publish() reads it (the hosts route their own publishes in-process, from the config).
int apply_postgres_schema(const config::Config& config, bool dry_run) {
  const auto& settings = config.broker.postgres;
  const std::string where =
      "schema '" + settings.schema + "' of " + postgres::describe_dsn(settings.dsn);
  const transport::RoutingTable routing = config::routing_table(config);
  queue::PgRoutingCounts counts;
  counts.queues = routing.queues().size();
  counts.exchanges = routing.exchanges().size();
  for (const auto& [name, exchange] : routing.exchanges())
    counts.bindings += exchange.bindings.size();
  if (dry_run) {
    std::cout << "would create, where missing, the PostgreSQL queue in " << where
              << " (schema version " << queue::kPgQueueSchemaVersion
              << ": warren_queue, warren_publish() and its routing tables)\n"
              << "would store the routing for warren_publish(): " << routing_summary(counts)
              << " (replacing what is there)\n";
    return kExitOk;
  }
  try {
    const auto connection = connect_pg_queue(config, "warren topology apply");
    const int before = queue::pg_queue_schema_version(*connection, settings.schema);
    queue::ensure_pg_queue_schema(*connection, settings.schema);
    counts = queue::store_pg_routing(*connection, settings.schema, routing);
    std::cout << "PostgreSQL queue in " << where << (before == 0 ? " created" : " already there")
              << " (schema version " << queue::kPgQueueSchemaVersion << ")\n"
              << "routing stored for warren_publish(): " << routing_summary(counts) << "; queues:";
    for (const auto& queue : routing.queues())
      std::cout << " " << queue;
    std::cout << "\n";
  } catch (const queue::PgQueueSchemaError& error) {
    std::cerr << "topology apply: " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (const postgres::PgError& error) {
    std::cerr << "topology apply: " << error.what() << "\n";
    return kExitRuntimeFailure;
  }
  return kExitOk;
}

}  // namespace

int topology_apply_command(const ConfigOptions& options, bool dry_run) {
  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
  if (config->broker.transport == config::BrokerConfig::Transport::sqlite)
    return apply_sqlite_schema(*config, dry_run);
  if (config->broker.transport == config::BrokerConfig::Transport::postgres)
    return apply_postgres_schema(*config, dry_run);
  const broker::TopologyDeclarer declarer(*config);
  if (dry_run) {
    std::cout << "would declare:\n";
    for (const auto& line : declarer.describe())
      std::cout << "  " << line << "\n";
    return kExitOk;
  }
  std::vector<std::string> consumed;
  for (const auto& worker : config->workers)
    consumed.push_back(worker.queue);
  std::string last_error;
  for (const auto& endpoint : broker::resolve_endpoints(config->broker)) {
    try {
      auto connection = broker::AmqpConnection::open(
          endpoint, broker::connection_options(config->broker, "topology", config->host.name));
      amqp_channel_open(connection->state(), 1);
      connection->check(connection->last_reply(), "opening a channel");
      const auto names = declarer.declare(*connection, 1, consumed);
      connection->close();
      std::cout << "topology applied on " << endpoint.describe() << ":\n";
      for (const auto& line : declarer.describe())
        std::cout << "  " << line << "\n";
      return kExitOk;
    } catch (const broker::TopologyError& error) {
      std::cerr << "topology refused: " << error.what() << "\n";
      return kExitRuntimeFailure;
    } catch (const broker::ConnectionLost& error) {
      last_error = error.what();
    }
  }
  std::cerr << last_error << "\n";
  return kExitRuntimeFailure;
}

}  // namespace warren::cli
