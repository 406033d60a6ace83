// See outbox_command.h.
//   init        applies sql/outbox.sql (idempotent) to each selected outbox's database, and,
//               without --outbox, to the databases of the workers' idempotency stores too
//   status      pending, dead and the age of the oldest pending row, per outbox
//   retry-dead  sets dead rows back to pending (attempts 0) and prints how many
#include <iostream>
#include <set>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/outbox_command.h"
#include "cli/queue_database.h"
#include "cli/text_table.h"
#include "observability/log.h"
#include "outbox/outbox_queries.h"
#include "outbox/outbox_schema.h"
#include "postgres/pg_connection.h"
#include "queue/sqlite_connection.h"
#include "queue/sqlite_outbox_queries.h"
#include "queue/sqlite_schema.h"

namespace warren::cli {
namespace {

bool in_sqlite(const config::OutboxConfig& outbox) {
  return outbox.store == config::OutboxConfig::Store::sqlite;
}

postgres::PgConnection connect_for(const std::string& what, const std::string& dsn) {
  postgres::PgConnectOptions options;
  options.dsn = dsn;
  options.application_name = "warren outbox (" + what + ")";
  return postgres::PgConnection(options);
}

int init(const config::Config& config, const std::vector<const config::OutboxConfig*>& outboxes,
         bool include_inboxes) {
  struct Target {
    std::string what;
    std::string dsn;
  };
  std::vector<Target> targets;
  std::set<std::string> seen_dsns;
  for (const auto* outbox : outboxes) {
    if (in_sqlite(*outbox)) {
      queue::SqliteConnection db(queue::SqliteOpenOptions{config.broker.sqlite.path});
      queue::ensure_sqlite_schema(db);
      std::cout << "outbox '" << outbox->name << "': warren_outbox and warren_queue are ready in "
                << db.path() << "\n";
    } else if (seen_dsns.insert(outbox->dsn).second) {
      targets.push_back({"outbox '" + outbox->name + "'", outbox->dsn});
    }
  }
  if (include_inboxes) {
    for (const auto& worker : config.workers) {
      if (worker.idempotency && seen_dsns.insert(worker.idempotency->dsn).second)
        targets.push_back({"worker '" + worker.name + "' idempotency", worker.idempotency->dsn});
    }
  }
  if (targets.empty() && outboxes.empty()) {
    std::cerr << "outbox init: " << config.file.string()
              << " has no [[outbox]] and no worker with idempotency: nothing to set up\n";
    return kExitBadUsageOrConfig;
  }
  for (const auto& target : targets) {
    auto db = connect_for("init", target.dsn);
    outbox::apply_outbox_schema(db);
    std::cout << target.what << ": warren_outbox and warren_inbox are ready in " << db.describe()
              << "\n";
  }
  return kExitOk;
}

int status(const config::Config& config, const std::vector<const config::OutboxConfig*>& outboxes) {
  std::vector<std::vector<std::string>> rows{{"outbox", "pending", "dead", "oldest pending"}};
  for (const auto* outbox : outboxes) {
    if (in_sqlite(*outbox)) {
      const auto db = open_queue_database(config);
      const queue::SqliteOutboxStats stats = queue::sqlite_outbox_stats(*db);
      rows.push_back({outbox->name, std::to_string(stats.pending), std::to_string(stats.dead),
                      format_age(stats.oldest_pending_age_seconds)});
      continue;
    }
    auto db = connect_for("status", outbox->dsn);
    const outbox::OutboxStats stats = outbox::query_outbox_stats(db);
    rows.push_back({outbox->name, std::to_string(stats.pending), std::to_string(stats.dead),
                    format_age(stats.oldest_pending_age_seconds)});
  }
  print_aligned(std::cout, rows);
  return kExitOk;
}

int retry_dead(const config::Config& config,
               const std::vector<const config::OutboxConfig*>& outboxes) {
  for (const auto* outbox : outboxes) {
    long revived = 0;
    if (in_sqlite(*outbox)) {
      const auto db = open_queue_database(config);
      revived = queue::sqlite_outbox_retry_dead(*db);
    } else {
      auto db = connect_for("retry-dead", outbox->dsn);
      revived = outbox::retry_dead_rows(db);
    }
    std::cout << "outbox '" << outbox->name << "': " << revived
              << " dead row(s) set back to pending\n";
  }
  return kExitOk;
}

}  // namespace

int outbox_command(const ConfigOptions& options, const OutboxCommandOptions& command) {
  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
  observability::configure_logging("warn", observability::LogFormat::text);

  std::vector<const config::OutboxConfig*> outboxes;
  for (const auto& outbox : config->outboxes) {
    if (command.outbox.empty() || outbox.name == command.outbox)
      outboxes.push_back(&outbox);
  }
  if (!command.outbox.empty() && outboxes.empty()) {
    std::string known;
    for (const auto& outbox : config->outboxes)
      known += (known.empty() ? "" : ", ") + ("'" + outbox.name + "'");
    std::cerr << "outbox: " << config->file.string() << " has no [[outbox]] named '"
              << command.outbox << "'"
              << (known.empty() ? std::string(" (it has none)") : "; it has " + known) << "\n";
    return kExitBadUsageOrConfig;
  }
  if (outboxes.empty() && command.action != OutboxAction::init) {
    std::cerr << "outbox: " << config->file.string()
              << " has no [[outbox]] section; add one (name, dsn or dsn_file, exchange)\n";
    return kExitBadUsageOrConfig;
  }

  try {
    switch (command.action) {
      case OutboxAction::init:
        return init(*config, outboxes, command.outbox.empty());
      case OutboxAction::status:
        return status(*config, outboxes);
      case OutboxAction::retry_dead:
        return retry_dead(*config, outboxes);
    }
  } catch (const queue::SqliteError& error) {
    std::cerr << "outbox: " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (const postgres::PgError& error) {
    std::cerr << "outbox: " << error.what();
    if (error.undefined_table())
      std::cerr << "; create the tables with `warren outbox init -c " << options.file << "`";
    std::cerr << "\n";
    return kExitRuntimeFailure;
  }
  return kExitBadUsageOrConfig;
}

}  // namespace warren::cli
