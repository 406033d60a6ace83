// See rabbitmq_only_keys.h.
#include "config/rabbitmq_only_keys.h"

#include <string>

namespace warren::config {

bool is_table_queue(const BrokerConfig& broker) noexcept {
  return broker.transport == BrokerConfig::Transport::sqlite ||
         broker.transport == BrokerConfig::Transport::postgres;
}

std::string_view transport_name(BrokerConfig::Transport transport) noexcept {
  switch (transport) {
    case BrokerConfig::Transport::rabbitmq:
      return "rabbitmq";
    case BrokerConfig::Transport::memory:
      return "memory";
    case BrokerConfig::Transport::sqlite:
      return "sqlite";
    case BrokerConfig::Transport::postgres:
      return "postgres";
  }
  return "unknown";
}

void refuse_rabbitmq_only_keys(TableReader& table, std::initializer_list<std::string_view> keys,
                               const BrokerConfig& broker, std::string_view why) {
  for (const std::string_view key : keys) {
    if (table.find(key) == nullptr)
      continue;
    std::string message = "is a RabbitMQ setting, and transport = \"" +
                          std::string(transport_name(broker.transport)) + "\" has no broker";
    message += why.empty() ? ": remove it" : std::string(": ") + std::string(why);
    table.report(key, std::move(message));
  }
}

}  // namespace warren::config
