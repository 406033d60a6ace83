// Loading of [[workers]]: which plugin consumes which queue, how many messages at once, how
// failures are retried and dead-lettered, and the plugin's own settings.
#include <algorithm>
#include <climits>

#include "config/amqp_names.h"
#include "config/config_files.h"
#include "config/duration.h"
#include "config/loader_sections.h"
#include "config/rabbitmq_only_keys.h"
#include "config/scalar_tables.h"

namespace warren::config {
namespace {

bool is_plugin_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void read_retry(TableReader& worker_entry, RetryPolicy& retry) {
  read_sub_table(worker_entry, "retry", [&retry](TableReader& table) {
    table.read_integer("max_attempts", retry.max_attempts, 1, INT_MAX);
    table.read_enum<RetryPolicy::Backoff>("backoff", retry.backoff,
                                          {{"none", RetryPolicy::Backoff::none},
                                           {"fixed", RetryPolicy::Backoff::fixed},
                                           {"exponential", RetryPolicy::Backoff::exponential}});
    table.read_duration("initial", retry.initial);
    table.read_duration("max", retry.max);
    table.read_number("jitter", retry.jitter, 0.0, 1.0);
    if (table.read_integer("immediate", retry.immediate, 0, INT_MAX) &&
        retry.immediate >= retry.max_attempts) {
      table.report("immediate", "must be less than max_attempts (" +
                                    std::to_string(retry.max_attempts) + "), got " +
                                    std::to_string(retry.immediate));
    }
    if (retry.backoff == RetryPolicy::Backoff::exponential && retry.initial == Duration::zero()) {
      table.report("initial", "an exponential backoff from 0s never grows; use at least \"1ms\"");
    } else if (retry.initial > retry.max) {
      table.report("initial", "must not exceed max (" + format_duration(retry.max) + "), got " +
                                  in_quotes(format_duration(retry.initial)));
    }
  });
}

// `{ store = "postgres", dsn = "..." | dsn_file = "...", retention = "7d" }`
void read_idempotency(TableReader& worker_entry, const LoadContext& context, WorkerConfig& worker) {
  read_sub_table(worker_entry, "idempotency", [&](TableReader& table) {
    IdempotencyConfig idempotency;
    table.read_one_of("store", idempotency.store, {"postgres"});
    table.read_duration("retention", idempotency.retention, Duration(1));
    const bool has_dsn = table.find("dsn") != nullptr;
    std::filesystem::path dsn_file;
    const bool has_dsn_file = table.find("dsn_file") != nullptr;
    if (has_dsn && has_dsn_file) {
      table.report("dsn_file", "set either dsn or dsn_file, not both");
    } else if (!has_dsn && !has_dsn_file) {
      table.require("dsn", "set dsn or dsn_file (a file holding the PostgreSQL connection string)");
    }
    table.read_non_empty_string("dsn", idempotency.dsn);
    if (table.read_path("dsn_file", dsn_file) && !has_dsn) {
      read_secret_file(table, "dsn_file", context.resolve(dsn_file), idempotency.dsn);
    }
    worker.idempotency = std::move(idempotency);
  });
}

// On RabbitMQ, a worker must have somewhere to dead-letter (issue 19, defect 1): the message
// would otherwise be rejected, and a queue without a dead-letter exchange of its own drops it. A
// queue the config does not declare may have one on the broker (a policy), which Warren cannot
// see: that needs allow_message_loss too. (The in-memory transport, for tests and demos, is left
// alone; the table queues keep a final failure as a `dead` row.)
void check_dead_letter_target(TableReader& entry, const Config& config,
                              const WorkerConfig& worker) {
  if (config.broker.transport != BrokerConfig::Transport::rabbitmq || worker.queue.empty() ||
      !worker.dead_letter_exchange.empty() || worker.allow_message_loss)
    return;
  const QueueConfig* queue = config.find_queue(worker.queue);
  if (queue != nullptr && (!queue->dead_letter_exchange.empty() || queue->allow_message_loss))
    return;
  entry.report("dead_letter_exchange",
               "worker " + in_quotes(worker.name) +
                   " dead-letters into nothing: neither it nor queue " + in_quotes(worker.queue) +
                   " has a dead_letter_exchange, so a message that fails for good (PermanentError, "
                   "Outcome::dead_letter, its last attempt, max_crashes) would be dropped. Set "
                   "dead_letter_exchange (declared in [[exchanges]]) on this worker" +
                   (queue != nullptr ? " or on queue " + in_quotes(worker.queue) : std::string()) +
                   ", with a dead_letter_queue to keep the letters for `warren dlq`; or set "
                   "allow_message_loss = true to accept the loss");
}

void read_worker_keys(TableReader& entry, const LoadContext& context, const Config& config,
                      WorkerConfig& worker) {
  if (entry.require("name") && entry.read_non_empty_string("name", worker.name)) {
    if (const WorkerConfig* first = config.find_worker(worker.name)) {
      entry.report("name", "duplicate worker name " + in_quotes(worker.name) +
                               "; first declared at " + to_string(first->where));
    }
  }
  if (entry.require("plugin", "the host loads lib<plugin>.so from host.plugin_dir") &&
      entry.read_string("plugin", worker.plugin) && !is_plugin_name(worker.plugin)) {
    entry.report("plugin",
                 "must be a plugin name of lowercase letters, digits and '_' (the host loads "
                 "lib<plugin>.so from host.plugin_dir), got " +
                     in_quotes(worker.plugin));
  }
  if (entry.require("queue")) {
    entry.read_non_empty_string("queue", worker.queue);
  }
  entry.read_integer("prefetch", worker.prefetch, 1, 65535);
  read_worker_isolation(entry, worker);  // and concurrency or processes
  read_retry(entry, worker.retry);
  entry.read_integer("max_crashes", worker.max_crashes, 1, 1000);
  entry.read_integer("metric_series_limit", worker.metric_series_limit, 1, 100000);
  entry.read_duration("max_handler_time", worker.max_handler_time);
  read_settings(entry, "settings", worker.settings);
  if (is_table_queue(config.broker)) {
    refuse_rabbitmq_only_keys(
        entry, {"dead_letter_exchange", "dead_letter_queue", "allow_message_loss"}, config.broker,
        "a message that fails for good is a `dead` row of its queue, where `warren dlq` finds it");
    if (!worker.queue.empty() && config.find_queue(worker.queue) == nullptr) {
      entry.report("queue", "queue " + in_quotes(worker.queue) +
                                " is not a [[queues]] entry: with transport = \"" +
                                std::string(transport_name(config.broker.transport)) +
                                "\" every queue is declared in this file");
    }
    read_idempotency(entry, context, worker);
    return;
  }
  if (entry.read_string("dead_letter_exchange", worker.dead_letter_exchange) &&
      !worker.dead_letter_exchange.empty()) {
    check_exchange_reference(entry, "dead_letter_exchange", worker.dead_letter_exchange, config);
  }
  if (entry.read_string("dead_letter_queue", worker.dead_letter_queue) &&
      !worker.dead_letter_queue.empty()) {
    check_declarable_name(entry, "dead_letter_queue", worker.dead_letter_queue);
    const QueueConfig* queue = config.find_queue(worker.queue);
    if (worker.dead_letter_exchange.empty() &&
        (queue == nullptr || queue->dead_letter_exchange.empty())) {
      entry.report("dead_letter_queue",
                   "needs a dead-letter exchange to be bound to: set dead_letter_exchange on "
                   "this worker or on queue " +
                       in_quotes(worker.queue));
    }
  }
  entry.read_bool("allow_message_loss", worker.allow_message_loss);
  check_dead_letter_target(entry, config, worker);
  if (!worker.queue.empty()) {
    check_consumable_name(entry, "queue", worker.queue, config.find_queue(worker.queue));
  }
  read_idempotency(entry, context, worker);
}

}  // namespace

void load_workers(TableReader& root, const LoadContext& context, Config& config) {
  read_array_of_tables(root, "workers", "write one [[workers]] section per worker",
                       [&](TableReader& entry) {
                         WorkerConfig worker;
                         worker.where = context.problems.locate(entry.source());
                         read_worker_keys(entry, context, config, worker);
                         config.workers.push_back(std::move(worker));
                       });
}

}  // namespace warren::config
