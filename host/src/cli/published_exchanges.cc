// See published_exchanges.h.
#include "cli/published_exchanges.h"

#include "broker/delay_levels.h"

namespace warren::cli {

std::set<std::string, std::less<>> published_exchange_labels(const config::Config& config) {
  std::set<std::string, std::less<>> names;
  names.insert("");  // the default exchange: one name, whatever the traffic
  names.insert(broker::delay_entry_exchange());               // retries
  names.insert(std::string(broker::kDelayDeliveryExchange));  // replays into one queue
  for (const auto& exchange : config.exchanges)
    names.insert(exchange.name);
  for (const auto& queue : config.queues) {
    if (!queue.dead_letter_exchange.empty())
      names.insert(queue.dead_letter_exchange);
    for (const auto& binding : queue.bindings)
      names.insert(binding.exchange);  // amq.* ones need no [[exchanges]] entry
  }
  for (const auto& worker : config.workers) {
    if (!worker.dead_letter_exchange.empty())
      names.insert(worker.dead_letter_exchange);
  }
  for (const auto& outbox : config.outboxes) {
    if (!outbox.exchange.empty())
      names.insert(outbox.exchange);
  }
  return names;
}

}  // namespace warren::cli
