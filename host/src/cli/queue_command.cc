// See queue_command.h.
//   status  per queue of the config (and any other queue that has rows): rows by status, and how
//           long the oldest ready row has waited since it fell due; on PostgreSQL also the oldest
//           transaction holding back vacuum
//   backup  SQLite: an online, consistent copy of the database with VACUUM INTO; never
//           overwrites. PostgreSQL: refused (the database's own backups, pg_dump, cover it)
#include "cli/queue_command.h"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/queue_database.h"
#include "cli/text_table.h"
#include "observability/log.h"
#include "observability/terminal_escape.h"
#include "postgres/pg_connection.h"
#include "queue/pg_queue_census.h"
#include "queue/pg_queue_schema.h"
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

// The table of every queue of the config, then every other queue that has rows, marked.
void print_census(const config::Config& config, std::map<std::string, queue::QueueCensus> census,
                  std::int64_t now) {
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
  print_aligned(std::cout, rows);
  if (!census.empty()) {
    std::cout << "\n* not a [[queues]] entry of " << config.file.string()
              << ": no worker of this config consumes it\n";
  }
}

int status(const config::Config& config) {
  const auto database = open_queue_database(config);
  const std::int64_t now = queue::now_ms();
  auto census = queue::take_queue_census(*database, now);
  std::cout << "queue database " << database->path().string() << " (schema version "
            << queue::sqlite_schema_version(*database) << ")\n\n";
  print_census(config, std::move(census), now);
  return kExitOk;
}

// What holds back vacuum, said so that the reader knows why it matters and what to do.
void print_xmin_holder(const std::optional<queue::XminHolder>& holder) {
  if (!holder) {
    std::cout << "\noldest transaction holding back vacuum (xmin): none in this database\n";
    return;
  }
  std::cout << "\noldest transaction holding back vacuum (xmin): " << std::fixed
            << std::setprecision(1) << holder->transaction_seconds << "s, pid " << holder->pid;
  if (!holder->application_name.empty())
    std::cout << " (" << observability::terminal_safe(holder->application_name) << ")";
  if (!holder->state.empty())
    std::cout << ", " << holder->state;
  std::cout << "\n  while it is open, vacuum cannot remove the row versions that claims and "
               "settlements leave behind, and every claim steps over more of them; a long one "
               "slows the queue down (end it, or set idle_in_transaction_session_timeout)\n";
}

int postgres_status(const config::Config& config) {
  const auto& settings = config.broker.postgres;
  const auto connection = open_pg_queue_database(config, "warren queue status");
  auto census = queue::take_pg_queue_census(*connection);
  const auto holder = queue::oldest_xmin_holder(*connection);
  std::cout << "PostgreSQL queue in schema '" << settings.schema << "' of "
            << connection->describe() << " (schema version "
            << queue::pg_queue_schema_version(*connection, settings.schema) << ")\n\n";
  print_census(config, std::move(census.queues), census.server_now_ms);
  print_xmin_holder(holder);
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
  const auto transport = config->broker.transport;
  if (transport == config::BrokerConfig::Transport::postgres) {
    if (command.action == QueueAction::backup) {
      std::cerr << "queue backup: the PostgreSQL queue lives in your database, in schema '"
                << config->broker.postgres.schema
                << "': back it up with the database (pg_dump --schema="
                << config->broker.postgres.schema
                << ", or your base backups); this verb copies the SQLite queue's file\n";
      return kExitBadUsageOrConfig;
    }
    try {
      return postgres_status(*config);
    } catch (const queue::PgQueueSchemaError& error) {
      std::cerr << "queue status: " << error.what() << "\n";
    } catch (const postgres::PgError& error) {
      std::cerr << "queue status: " << error.what() << "\n";
    }
    return kExitRuntimeFailure;
  }
  if (transport != config::BrokerConfig::Transport::sqlite) {
    std::cerr << "queue " << verb << ": this verb is for the table-queue transports ([broker] "
              << "transport = \"sqlite\" or \"postgres\"), and " << config->file.string()
              << " uses "
              << (transport == config::BrokerConfig::Transport::rabbitmq
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
