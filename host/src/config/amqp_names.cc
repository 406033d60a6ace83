// Name rules for RabbitMQ entities and exchange references in warren.toml.
#include "config/amqp_names.h"

namespace warren::config {

bool is_predeclared_exchange(std::string_view name) {
  return name.empty() || name.starts_with("amq.");
}

void check_declarable_name(TableReader& reader, std::string_view key, const std::string& name) {
  constexpr std::size_t kMaxNameBytes = 255;  // an AMQP short string
  if (name.size() > kMaxNameBytes) {
    reader.report(key, "must be at most 255 bytes long (an AMQP short string), got " +
                           std::to_string(name.size()) + " bytes");
  } else if (name.starts_with("amq.")) {
    reader.report(key,
                  "names starting with \"amq.\" are reserved by RabbitMQ; got " + in_quotes(name));
  }
}

void check_consumable_name(TableReader& reader, std::string_view key, const std::string& name,
                           const QueueConfig* queue_config) {
  if (name.size() <= kMaxConsumedQueueNameBytes ||
      (queue_config != nullptr && queue_config->server_named)) {
    return;
  }
  std::string message = "a queue a worker consumes must be at most ";
  message += std::to_string(kMaxConsumedQueueNameBytes);
  message += " bytes long, got ";
  message += std::to_string(name.size());
  message +=
      " bytes: its name ends the routing key of every retry delay level (56 bytes of delay bits "
      "before it), and RabbitMQ refuses keys over 255 bytes, so the queue could never be bound "
      "to warren.delay.delivery";
  reader.report(key, message);
}

void check_exchange_reference(TableReader& reader, std::string_view key, const std::string& name,
                              const Config& config) {
  if (is_predeclared_exchange(name) || config.find_exchange(name) != nullptr) {
    return;
  }
  reader.report(key, "exchange " + in_quotes(name) +
                         " is not declared; add an [[exchanges]] entry with name = " +
                         in_quotes(name) + " (only \"amq.*\" exchanges exist without one)");
}

}  // namespace warren::config
