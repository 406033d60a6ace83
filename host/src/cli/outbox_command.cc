// See outbox_command.h.
//   init        applies sql/outbox.sql (idempotent) to each selected outbox's database, and,
//               without --outbox, to the databases of the workers' idempotency stores too
//   status      pending, dead and the age of the oldest pending row, per outbox
//   retry-dead  sets dead rows back to pending (attempts 0) and prints how many
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/outbox_command.h"
#include "observability/log.h"
#include "outbox/outbox_queries.h"
#include "outbox/outbox_schema.h"
#include "outbox/pg_connection.h"

namespace warren::cli {
namespace {

outbox::PgConnection connect_for(const std::string& what, const std::string& dsn) {
  outbox::PgConnectOptions options;
  options.dsn = dsn;
  options.application_name = "warren outbox (" + what + ")";
  return outbox::PgConnection(options);
}

std::string format_age(const std::optional<double>& seconds) {
  if (!seconds)
    return "-";
  char text[32];
  if (*seconds < 120)
    std::snprintf(text, sizeof(text), "%.1fs", *seconds);
  else if (*seconds < 7200)
    std::snprintf(text, sizeof(text), "%.1fm", *seconds / 60);
  else
    std::snprintf(text, sizeof(text), "%.1fh", *seconds / 3600);
  return text;
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
    if (seen_dsns.insert(outbox->dsn).second)
      targets.push_back({"outbox '" + outbox->name + "'", outbox->dsn});
  }
  if (include_inboxes) {
    for (const auto& worker : config.workers) {
      if (worker.idempotency && seen_dsns.insert(worker.idempotency->dsn).second)
        targets.push_back({"worker '" + worker.name + "' idempotency", worker.idempotency->dsn});
    }
  }
  if (targets.empty()) {
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

int status(const std::vector<const config::OutboxConfig*>& outboxes) {
  std::ostringstream table;
  table << "outbox\tpending\tdead\toldest pending\n";
  for (const auto* outbox : outboxes) {
    auto db = connect_for("status", outbox->dsn);
    const outbox::OutboxStats stats = outbox::query_outbox_stats(db);
    table << outbox->name << '\t' << stats.pending << '\t' << stats.dead << '\t'
          << format_age(stats.oldest_pending_age_seconds) << '\n';
  }
  // Aligned columns, like `column -t -s $'\t'`.
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> widths;
  std::istringstream lines(table.str());
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, '\t');)
      cells.push_back(cell);
    widths.resize(std::max(widths.size(), cells.size()), 0);
    for (std::size_t i = 0; i < cells.size(); ++i)
      widths[i] = std::max(widths[i], cells[i].size());
    rows.push_back(std::move(cells));
  }
  for (const auto& cells : rows) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      std::cout << cells[i];
      if (i + 1 < cells.size())
        std::cout << std::string(widths[i] - cells[i].size() + 2, ' ');
    }
    std::cout << '\n';
  }
  return kExitOk;
}

int retry_dead(const std::vector<const config::OutboxConfig*>& outboxes) {
  for (const auto* outbox : outboxes) {
    auto db = connect_for("retry-dead", outbox->dsn);
    const long revived = outbox::retry_dead_rows(db);
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
        return status(outboxes);
      case OutboxAction::retry_dead:
        return retry_dead(outboxes);
    }
  } catch (const outbox::PgError& error) {
    std::cerr << "outbox: " << error.what();
    if (error.undefined_table())
      std::cerr << "; create the tables with `warren outbox init -c " << options.file << "`";
    std::cerr << "\n";
    return kExitRuntimeFailure;
  }
  return kExitBadUsageOrConfig;
}

}  // namespace warren::cli
