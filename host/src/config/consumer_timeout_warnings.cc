// See consumer_timeout_warnings.h.
#include "config/consumer_timeout_warnings.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "config/duration.h"
#include "config/problem_list.h"

namespace warren::config {

std::vector<std::string> consumer_timeout_warnings(const Config& config) {
  std::vector<std::string> warnings;
  if (config.broker.transport != BrokerConfig::Transport::rabbitmq)
    return warnings;
  for (const WorkerConfig& worker : config.workers) {
    if (!worker.max_handler_time)
      continue;
    // The handler calls the last prefetched delivery waits for, its own included. With
    // isolation = "process", `processes` children each run one message at once (concurrency
    // stays 1 and is not what bounds the wait).
    const bool in_processes = worker.isolation == WorkerConfig::Isolation::process;
    const int at_once = in_processes ? worker.processes : worker.concurrency;
    const std::string_view at_once_key = in_processes ? "processes" : "concurrency";
    const std::int64_t rounds = (worker.prefetch + at_once - 1) / at_once;
    const Duration longest = *worker.max_handler_time * rounds;
    if (longest <= config.broker.consumer_timeout)
      continue;
    warnings.push_back(
        to_string(worker.where) + ": workers: worker \"" + worker.name +
        "\" can hold a delivery unacknowledged for " + format_duration(longest) + " (prefetch " +
        std::to_string(worker.prefetch) + " over " + std::string(at_once_key) + " " +
        std::to_string(at_once) + " is " + std::to_string(rounds) +
        " handler call(s) of max_handler_time " + format_duration(*worker.max_handler_time) +
        "), more than the broker's consumer_timeout of " +
        format_duration(config.broker.consumer_timeout) +
        " ([broker] consumer_timeout): the broker would close the worker's channel and its "
        "deliveries would go back to the queue, the started ones to run again; lower prefetch "
        "toward " +
        std::string(at_once_key) +
        ", or raise the broker's consumer_timeout and [broker] consumer_timeout "
        "with it, see \"consumer_timeout\" in docs/operations.md");
  }
  return warnings;
}

}  // namespace warren::config
