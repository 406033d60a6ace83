// See transport_factory.h.
#include "cli/transport_factory.h"

#include "broker/rabbitmq_transport.h"
#include "runtime/in_memory_transport.h"

namespace warren::cli {

std::unique_ptr<runtime::Transport> make_transport(const config::Config& config,
                                                   observability::Metrics& metrics,
                                                   observability::Health& health) {
  switch (config.broker.transport) {
    case config::BrokerConfig::Transport::memory:
      return std::make_unique<runtime::InMemoryTransport>(config, config.broker.publish_timeout);
    case config::BrokerConfig::Transport::rabbitmq:
      return std::make_unique<broker::RabbitMqTransport>(config, &metrics, &health);
  }
  throw runtime::TransportError("unknown transport");
}

}  // namespace warren::cli
