// Loading of [[outbox]]: relays that publish rows of a PostgreSQL outbox table to the broker.
#include "config/amqp_names.h"
#include "config/config_files.h"
#include "config/duration.h"
#include "config/loader_sections.h"

namespace warren::config {
namespace {

void read_dsn(TableReader& entry, const LoadContext& context, OutboxConfig& outbox) {
  const bool has_dsn = entry.find("dsn") != nullptr;
  const bool has_dsn_file = entry.find("dsn_file") != nullptr;
  if (has_dsn && has_dsn_file) {
    entry.report("dsn_file", "set either dsn or dsn_file, not both");
  } else if (!has_dsn && !has_dsn_file) {
    entry.require("dsn", "set dsn or dsn_file (a file holding the PostgreSQL connection string)");
  }
  entry.read_non_empty_string("dsn", outbox.dsn);
  std::filesystem::path dsn_file;
  if (entry.read_path("dsn_file", dsn_file) && !has_dsn) {
    read_secret_file(entry, "dsn_file", context.resolve(dsn_file), outbox.dsn);
  }
}

void read_backoff(TableReader& entry, OutboxConfig& outbox) {
  read_sub_table(entry, "backoff", [&outbox](TableReader& table) {
    table.read_duration("initial", outbox.backoff_initial, Duration(1));
    if (table.read_duration("max", outbox.backoff_max, Duration(1)) &&
        outbox.backoff_max < outbox.backoff_initial) {
      table.report("max", "must be at least initial (" + format_duration(outbox.backoff_initial) +
                              "), got " + in_quotes(format_duration(outbox.backoff_max)));
    }
  });
}

// Relays on one database claim rows from the same warren_outbox table: with different default
// exchanges, a row that names no exchange would go to whichever relay claimed it. The message
// names the other outbox, never the dsn (it may hold a password).
void check_shared_database(TableReader& entry, const OutboxConfig& outbox, const Config& config) {
  if (outbox.dsn.empty())
    return;
  for (const OutboxConfig& other : config.outboxes) {
    if (other.dsn != outbox.dsn || other.exchange == outbox.exchange)
      continue;
    entry.report(entry.find("dsn") != nullptr ? "dsn" : "dsn_file",
                 "the same database as outbox " + in_quotes(other.name) + " (" +
                     to_string(other.where) + "), whose exchange is " + in_quotes(other.exchange) +
                     ", not " + in_quotes(outbox.exchange) +
                     ": both relays claim rows of one warren_outbox table, so a row without an "
                     "exchange would go to either; use one [[outbox]] per database");
    return;
  }
}

// store = "sqlite": the table is in the queue's own file, and routing it is one transaction that
// cannot fail half-way, so there is no dsn, no attempts and no backoff to set.
void read_sqlite_store_keys(TableReader& entry, const Config& config) {
  if (config.broker.transport != BrokerConfig::Transport::sqlite) {
    entry.report("store",
                 "store = \"sqlite\" relays the warren_outbox table of the SQLite queue's own "
                 "file: it needs [broker] transport = \"sqlite\"");
  }
  for (const std::string_view key : {"dsn", "dsn_file"}) {
    if (entry.find(key) != nullptr)
      entry.report(key, "store = \"sqlite\" uses the queue's own file ([broker.sqlite] path)");
  }
  for (const std::string_view key : {"max_attempts", "backoff"}) {
    if (entry.find(key) != nullptr) {
      entry.report(key,
                   "store = \"sqlite\" routes a row into the queue in the transaction that marks "
                   "it sent: nothing is retried (a row that cannot be routed is dead at once)");
    }
  }
}

}  // namespace

void load_outboxes(TableReader& root, const LoadContext& context, Config& config) {
  read_array_of_tables(
      root, "outbox", "write one [[outbox]] section per relay", [&](TableReader& entry) {
        OutboxConfig outbox;
        outbox.where = context.problems.locate(entry.source());
        if (entry.require("name") && entry.read_non_empty_string("name", outbox.name)) {
          for (const OutboxConfig& other : config.outboxes) {
            if (other.name == outbox.name) {
              entry.report("name", "duplicate outbox name " + in_quotes(outbox.name) +
                                       "; first declared at " + to_string(other.where));
              break;
            }
          }
        }
        entry.read_enum<OutboxConfig::Store>(
            "store", outbox.store,
            {{"postgres", OutboxConfig::Store::postgres}, {"sqlite", OutboxConfig::Store::sqlite}});
        if (entry.read_string("exchange", outbox.exchange)) {
          check_exchange_reference(entry, "exchange", outbox.exchange, config);
        }
        entry.read_integer("batch", outbox.batch, 1, 10000);
        entry.read_duration("poll_interval", outbox.poll_interval, Duration(1));
        entry.read_duration("retention", outbox.retention, std::chrono::seconds(1));
        if (outbox.store == OutboxConfig::Store::sqlite) {
          read_sqlite_store_keys(entry, config);
        } else {
          read_dsn(entry, context, outbox);
          check_shared_database(entry, outbox, config);
          entry.read_integer("max_attempts", outbox.max_attempts, 1, INT32_MAX);
          read_backoff(entry, outbox);
        }
        config.outboxes.push_back(std::move(outbox));
      });
}

}  // namespace warren::config
