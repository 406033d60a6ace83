// See queue_command.h.
//   status  per queue of the config (and any other queue that has rows): rows by status, and how
//           long the oldest ready row has waited since it fell due
//   backup  an online, consistent copy of the database with VACUUM INTO; never overwrites
#include "cli/queue_command.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/queue_database.h"
#include "cli/text_table.h"
#include "observability/log.h"
#include "queue/sqlite_backup.h"
#include "queue/sqlite_queue_census.h"
#include "queue/sqlite_queue_store.h"
#include "queue/sqlite_schema.h"

namespace warren::cli {
namespace {

std::vector<std::string> census_row(const std::string& name, const queue::QueueCensus& counts,
                                    std::int64_t now) {
  std::optional<double> age;
  if (counts.oldest_ready_due)
    age = static_cast<double>(now - *counts.oldest_ready_due) / 1000.0;
  return {name,
          std::to_string(counts.pending),
          std::to_string(counts.running),
          std::to_string(counts.done),
          std::to_string(counts.dead),
          format_age(age)};
}

int status(const config::Config& config) {
  const auto database = open_queue_database(config);
  const std::int64_t now = queue::now_ms();
  auto census = queue::take_queue_census(*database, now);
  std::vector<std::vector<std::string>> rows{
      {"queue", "pending", "running", "done", "dead", "oldest ready"}};
  for (const auto& queue : config.queues) {
    const auto found = census.find(queue.name);
    rows.push_back(
        census_row(queue.name, found == census.end() ? queue::QueueCensus{} : found->second, now));
    if (found != census.end())
      census.erase(found);
  }
  // Rows for a queue the config does not name (a typo in an INSERT, a queue removed from the
  // config): nothing here consumes them, which is worth seeing.
  for (const auto& [name, counts] : census)
    rows.push_back(census_row(name + " *", counts, now));
  std::cout << "queue database " << database->path().string() << " (schema version "
            << queue::sqlite_schema_version(*database) << ")\n\n";
  print_aligned(std::cout, rows);
  if (!census.empty()) {
    std::cout << "\n* not a [[queues]] entry of " << config.file.string()
              << ": no worker of this config consumes it\n";
  }
  return kExitOk;
}

int backup(const config::Config& config, const std::string& to) {
  const std::filesystem::path target = std::filesystem::absolute(to);
  const auto database = open_queue_database(config);
  try {
    const queue::BackupReport report = queue::backup_queue_file(*database, target);
    std::cout << "backup of " << database->path().string() << " written to " << target.string()
              << ": " << report.bytes << " bytes (" << format_size(report.bytes) << "), "
              << report.rows << " row(s) in warren_queue\n";
  } catch (const queue::BackupTargetExists& error) {
    std::cerr << "queue backup: " << error.what() << "\n";
    return kExitBadUsageOrConfig;
  }
  return kExitOk;
}

}  // namespace

int queue_command(const ConfigOptions& options, const QueueCommandOptions& command) {
  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
  observability::configure_logging("warn", observability::LogFormat::text);
  const char* verb = command.action == QueueAction::status ? "status" : "backup";
  if (config->broker.transport != config::BrokerConfig::Transport::sqlite) {
    std::cerr << "queue " << verb << ": this verb is for the table-queue transports ([broker] "
              << "transport = \"sqlite\"), and " << config->file.string() << " uses "
              << (config->broker.transport == config::BrokerConfig::Transport::rabbitmq
                      ? "RabbitMQ: look at its queues with `rabbitmqctl list_queues` or the "
                        "management UI, and at dead letters with `warren dlq list`"
                      : "the in-memory transport, which keeps nothing outside the running "
                        "process")
              << "\n";
    return kExitBadUsageOrConfig;
  }
  try {
    return command.action == QueueAction::status ? status(*config) : backup(*config, command.to);
  } catch (const queue::SqliteError& error) {
    std::cerr << "queue " << verb << ": " << error.what() << "\n";
    return kExitRuntimeFailure;
  }
}

}  // namespace warren::cli
