// `warren publish`: one message, persistent and mandatory, waiting for the broker's confirm (or,
// on the SQLite queue, for the commit of its rows). Exit 0 once confirmed; 1 when nacked,
// returned (no queue bound) or not confirmed in time.
#include <fstream>
#include <iostream>
#include <sstream>

#include "broker/publisher_connection.h"
#include "broker/rabbitmq_transport.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/published_exchanges.h"
#include "cli/transport_factory.h"
#include "observability/log.h"
#include "transport/ids.h"

namespace warren::cli {
namespace {

// A transport that routes in-process (the SQLite queue): publishing is inserting the rows, done
// once publish() returns.
int publish_through_transport(const config::Config& config, transport::OutboundMessage message) {
  if (message.message_id.empty())
    message.message_id = transport::random_uuid();
  observability::Metrics metrics(published_exchange_labels(config));
  observability::Health health;
  try {
    const auto transport = make_transport(config, metrics, health);
    transport->publish(message);
    transport->close();
  } catch (const transport::TransportError& error) {
    std::cerr << "not published: " << error.what() << "\n";
    return kExitRuntimeFailure;
  }
  std::cout << "published to " << message.exchange << " with routing key '" << message.routing_key
            << "' (committed), message_id " << message.message_id << "\n";
  return kExitOk;
}

}  // namespace

int publish_command(const ConfigOptions& options, const PublishOptions& publish) {
  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
  observability::configure_logging("warn", observability::LogFormat::text);

  transport::OutboundMessage message;
  message.exchange = publish.exchange;
  message.routing_key = publish.routing_key;
  message.content_type = publish.content_type;
  message.message_id = publish.message_id;
  if (!publish.body_file.empty()) {
    std::ifstream in(publish.body_file, std::ios::binary);
    if (!in) {
      std::cerr << "cannot read --body-file " << publish.body_file << "\n";
      return kExitBadUsageOrConfig;
    }
    std::ostringstream body;
    body << in.rdbuf();
    message.body = body.str();
  } else {
    message.body = publish.body;
  }
  for (const auto& header : publish.headers) {
    const auto equals = header.find('=');
    if (equals == std::string::npos || equals == 0) {
      std::cerr << "--header takes NAME=VALUE, got '" << header << "'\n";
      return kExitBadUsageOrConfig;
    }
    message.headers.emplace_back(header.substr(0, equals), header.substr(equals + 1));
  }

  if (config->broker.transport != config::BrokerConfig::Transport::rabbitmq)
    return publish_through_transport(*config, std::move(message));

  broker::PublisherOptions publisher_options;
  publisher_options.endpoints = broker::resolve_endpoints(config->broker);
  publisher_options.connection =
      broker::connection_options(config->broker, "publish", config->host.name);
  publisher_options.publish_timeout = config->broker.publish_timeout;
  publisher_options.reconnect_initial = config->broker.reconnect_initial;
  publisher_options.reconnect_max = config->broker.reconnect_max;
  broker::PublisherConnection publisher(std::move(publisher_options), nullptr, nullptr);
  const auto pending = publisher.send(message);
  try {
    pending->wait();
  } catch (const transport::PublishError& error) {
    std::cerr << "not published: " << error.what() << "\n";
    return kExitRuntimeFailure;
  }
  std::cout << "published to " << message.exchange << " with routing key '" << message.routing_key
            << "' (confirmed), message_id " << pending->message().message_id << "\n";
  return kExitOk;
}

}  // namespace warren::cli
