// See routing_table.h.
#include "config/routing_table.h"

#include <string>
#include <type_traits>
#include <variant>

namespace warren::config {
namespace {

std::string argument_text(const ArgumentValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else {
          return std::to_string(v);
        }
      },
      value);
}

}  // namespace

transport::ExchangeType to_transport(ExchangeType type) noexcept {
  switch (type) {
    case ExchangeType::direct:
      return transport::ExchangeType::direct;
    case ExchangeType::fanout:
      return transport::ExchangeType::fanout;
    case ExchangeType::topic:
      return transport::ExchangeType::topic;
    case ExchangeType::headers:
      return transport::ExchangeType::headers;
  }
  return transport::ExchangeType::direct;
}

transport::RoutingTable routing_table(const Config& config) {
  transport::RoutingTable table;
  for (const auto& exchange : config.exchanges)
    table.add_exchange(exchange.name, to_transport(exchange.type));
  for (const auto& queue : config.queues) {
    table.add_queue(queue.name);
    for (const auto& binding : queue.bindings) {
      transport::Binding routed{queue.name, binding.routing_key, {}};
      for (const auto& [name, value] : binding.arguments)
        routed.arguments.emplace_back(name, argument_text(value));
      table.add_binding(binding.exchange, std::move(routed));
    }
  }
  for (const auto& worker : config.workers) {
    if (!worker.dead_letter_queue.empty())
      table.add_queue(worker.dead_letter_queue);
  }
  return table;
}

}  // namespace warren::config
