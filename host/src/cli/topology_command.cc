// `warren topology apply -c FILE [--dry-run]`: declares the config's exchanges, queues,
// bindings and retry delay levels, idempotently, and reports a conflict with what exists.
#include <iostream>

#include "broker/amqp_connection.h"
#include "broker/amqp_errors.h"
#include "broker/rabbitmq_transport.h"
#include "broker/topology.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace warren::cli {

int topology_apply_command(const ConfigOptions& options, bool dry_run) {
  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
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
