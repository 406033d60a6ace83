// See crash_limit_warnings.h.
#include "config/crash_limit_warnings.h"

#include <cstdint>
#include <optional>

#include "config/problem_list.h"

namespace warren::config {
namespace {

// What broker/topology.cc declares on a quorum queue with a dead-letter exchange and no
// delivery_limit of its own.
constexpr std::int64_t kLimitWarrenSets = 20;

// The delivery limit the broker applies to `queue`, if any.
std::optional<std::int64_t> effective_delivery_limit(const QueueConfig& queue) {
  if (queue.type != QueueType::quorum)
    return std::nullopt;
  if (queue.delivery_limit)
    return queue.delivery_limit;
  if (!queue.dead_letter_exchange.empty())
    return kLimitWarrenSets;
  return std::nullopt;
}

}  // namespace

std::vector<std::string> crash_limit_warnings(const Config& config) {
  std::vector<std::string> warnings;
  if (config.broker.transport != BrokerConfig::Transport::rabbitmq)
    return warnings;
  for (const WorkerConfig& worker : config.workers) {
    const QueueConfig* queue = config.find_queue(worker.queue);
    if (queue == nullptr)
      continue;
    const std::optional<std::int64_t> limit = effective_delivery_limit(*queue);
    if (!limit || *limit > worker.max_crashes)
      continue;
    warnings.push_back(
        to_string(worker.where) + ": workers: worker \"" + worker.name +
        "\" has max_crashes = " + std::to_string(worker.max_crashes) + " but its quorum queue \"" +
        queue->name + "\" has delivery_limit = " + std::to_string(*limit) +
        (queue->delivery_limit ? "" : " (the default)") +
        ": the broker would dead-letter a message that crashes the host, with its innocent "
        "neighbours, before the host does; make delivery_limit higher than max_crashes (the limit "
        "is the backstop), see \"crash accounting\" in docs/operations.md");
  }
  return warnings;
}

}  // namespace warren::config
