// The `warren` command line: verbs and their options (CLI11). Exit codes in exit_codes.h.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/outbox_command.h"
#include "cli/plugin_command.h"
#include "cli/queue_command.h"
#include "observability/log.h"
#include "warren/abi.h"
#include "warren_version.h"

namespace {

void add_config_options(CLI::App& verb, warren::cli::ConfigOptions& options) {
  verb.add_option("-c,--config", options.file, "The TOML configuration file")->required();
  verb.add_option("--plugin-dir", options.plugin_dir,
                  "Load plugins from this directory instead of [host] plugin_dir");
  verb.add_option("--broker-password-file", options.broker_password_file,
                  "Read the broker password from this file (e.g. a systemd credential: "
                  "%d/broker-password); overrides WARREN_BROKER_PASSWORD and password_file");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace warren::cli;
  CLI::App app("Warren: a worker host for message-consumer plugins", "warren");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("warren ") + WARREN_VERSION);

  ConfigOptions run_options;
  auto* run = app.add_subcommand("run", "Run the host: consume the configured queues");
  add_config_options(*run, run_options);

  ConfigOptions check_options;
  auto* check =
      app.add_subcommand("check", "Validate the config and load every plugin; connect to nothing");
  add_config_options(*check, check_options);

  ConfigOptions reload_options;
  auto* reload = app.add_subcommand(
      "reload", "Check the config, then have the running host reload it (SIGHUP)");
  add_config_options(*reload, reload_options);

  auto* version = app.add_subcommand("version", "Print the version and the plugin ABI");

  ConfigOptions publish_config;
  PublishOptions publish_options;
  auto* publish = app.add_subcommand(
      "publish", "Publish one message (persistent, mandatory) and wait for the broker's confirm");
  add_config_options(*publish, publish_config);
  publish->add_option("--exchange", publish_options.exchange, "Exchange to publish to")->required();
  publish->add_option("--routing-key", publish_options.routing_key, "Routing key")->required();
  auto* body = publish->add_option("--body", publish_options.body, "Message body");
  auto* body_file =
      publish->add_option("--body-file", publish_options.body_file, "Read the body from a file");
  body->excludes(body_file);
  publish->add_option("--header", publish_options.headers, "A header NAME=VALUE (repeatable)");
  publish->add_option("--content-type", publish_options.content_type, "Content type");
  publish->add_option("--message-id", publish_options.message_id,
                      "Message id (default: a new UUID)");

  auto* topology = app.add_subcommand("topology", "Manage the broker topology");
  topology->require_subcommand(1);
  ConfigOptions topology_config;
  bool dry_run = false;
  auto* apply = topology->add_subcommand(
      "apply", "Declare the config's exchanges, queues and bindings (idempotent)");
  add_config_options(*apply, topology_config);
  apply->add_flag("--dry-run", dry_run, "Show what would be declared; connect to nothing");

  auto* dlq = app.add_subcommand(
      "dlq",
      "Inspect, replay and purge a worker's dead letters (its dead-letter queue on RabbitMQ, the "
      "dead rows of its queue on the SQLite and PostgreSQL queues)");
  dlq->require_subcommand(1);
  ConfigOptions dlq_config;
  DlqOptions dlq_options;
  const std::vector<std::pair<const char*, const char*>> dlq_verbs{
      {"list", "Count the worker's dead letters by error and by original routing key"},
      {"peek", "Show dead letters with their headers and a body preview (default --limit 10)"},
      {"replay",
       "Republish dead letters into the worker's own queue with confirms (every property and "
       "header kept, the failure headers dropped, attempt reset); each is acked only after its "
       "republish is confirmed. On the table queues (SQLite, PostgreSQL): set the dead rows back "
       "to pending in the worker's "
       "queue (attempts 0, due now), one transaction each"},
      {"purge", "Delete the worker's dead letters (asks for --yes)"}};
  for (const auto& [name, description] : dlq_verbs) {
    auto* verb = dlq->add_subcommand(name, description);
    add_config_options(*verb, dlq_config);
    verb->add_option("--worker", dlq_options.worker,
                     "The worker whose dead letters to use (--worker, --queue or both)");
    verb->add_option(
        "--queue", dlq_options.queue,
        "The dead-letter queue (default: the worker's dead_letter_queue, or the "
        "queue bound to its dead-letter exchange; on the table queues, the worker's queue). "
        "Without --worker: every letter in it, each replayed into the queue it was "
        "dead-lettered from");
    verb->add_option("--limit", dlq_options.limit, "At most this many messages");
    verb->add_option("--where", dlq_options.where,
                     "Only messages whose header HEADER equals VALUE (repeatable)");
    if (std::string_view(name) == "replay" || std::string_view(name) == "purge") {
      verb->add_flag("--dry-run", dlq_options.dry_run, "Show what would happen; change nothing");
    }
    if (std::string_view(name) == "replay") {
      verb->add_option("--rate", dlq_options.rate, "At most N messages a second")
          ->transform([](std::string value) {
            return value.ends_with("/s") ? value.substr(0, value.size() - 2) : value;
          });
      auto* original_route = verb->add_flag(
          "--original-route", dlq_options.original_route,
          "Republish to the original exchange and routing key instead: every queue bound there "
          "gets a copy, other workers' queues included (RabbitMQ only)");
      // The default since replays stopped reaching other workers' queues; kept for scripts.
      static const std::string to_queue_help = "Deliver only to the worker's queue (the default)";
      verb->add_flag("--to-queue", to_queue_help)->excludes(original_route);
    }
    if (std::string_view(name) == "purge") {
      verb->add_flag("--yes", dlq_options.yes, "Really delete");
    }
    verb->callback([&dlq_options, verb_name = std::string(name)] { dlq_options.verb = verb_name; });
  }

  auto* outbox = app.add_subcommand("outbox", "The transactional outbox table (PostgreSQL)");
  outbox->require_subcommand(1);
  ConfigOptions outbox_config;
  OutboxCommandOptions outbox_options;
  const std::pair<const char*, const char*> outbox_verbs[] = {
      {"init", "Create warren_outbox and warren_inbox (sql/outbox.sql; safe to run again)"},
      {"status", "Pending and dead rows and the age of the oldest pending row, per outbox"},
      {"retry-dead", "Set dead rows back to pending (attempts reset); prints how many"}};
  std::vector<CLI::App*> outbox_subcommands;
  for (const auto& [verb, description] : outbox_verbs) {
    auto* sub = outbox->add_subcommand(verb, description);
    add_config_options(*sub, outbox_config);
    sub->add_option("--outbox", outbox_options.outbox, "Only this [[outbox]] (by name)");
    outbox_subcommands.push_back(sub);
  }

  auto* queue = app.add_subcommand("queue",
                                   "The table queue's database ([broker] transport = \"sqlite\" or "
                                   "\"postgres\")");
  queue->require_subcommand(1);
  ConfigOptions queue_config;
  QueueCommandOptions queue_options;
  auto* queue_status = queue->add_subcommand(
      "status",
      "Rows by status (pending, running, done, dead) per queue, and how long the oldest ready "
      "row has waited since it fell due; on PostgreSQL also the oldest transaction holding back "
      "vacuum");
  add_config_options(*queue_status, queue_config);
  auto* queue_backup = queue->add_subcommand(
      "backup",
      "Write an online, consistent copy of the SQLite database (VACUUM INTO) to PATH; prints "
      "where and how big (PostgreSQL: use pg_dump)");
  add_config_options(*queue_backup, queue_config);
  queue_backup->add_option("--to", queue_options.to, "Where to write the copy (must not exist)")
      ->required();

  auto* plugin = app.add_subcommand("plugin", "Plugin authoring");
  plugin->require_subcommand(1);
  std::string new_plugin_name;
  std::string new_plugin_dir;
  auto* plugin_new = plugin->add_subcommand(
      "new", "Write a new plugin project (CMake, handler, harness unit test, README) into DIR");
  plugin_new->add_option("NAME", new_plugin_name, "Plugin name: lowercase letters, digits, '_'")
      ->required();
  plugin_new->add_option("DIR", new_plugin_dir, "Directory to create (default: ./NAME)");

  ConfigOptions plugins_config;
  auto* plugins = app.add_subcommand(
      "plugins",
      "List each worker's plugin (file, name, version, ABI, fingerprint) and whether "
      "it would load; exit 2 if one would not");
  add_config_options(*plugins, plugins_config);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadUsageOrConfig;
  }

  // The verbs catch what they expect; anything else is still a runtime failure (exit 1) with a
  // message, not std::terminate (exit 134 and a core dump).
  try {
    if (*run)
      return run_command(run_options);
    if (*check)
      return check_command(check_options);
    if (*reload)
      return reload_command(reload_options);
    if (*publish) {
      if (publish_options.body_file.empty() && publish->count("--body") == 0) {
        std::cerr << "publish: give the body with --body TEXT or --body-file FILE\n";
        return kExitBadUsageOrConfig;
      }
      return publish_command(publish_config, publish_options);
    }
    if (*apply)
      return topology_apply_command(topology_config, dry_run);
    if (*dlq)
      return dlq_command(dlq_config, dlq_options);
    if (*outbox) {
      if (*outbox_subcommands[0])
        outbox_options.action = OutboxAction::init;
      else if (*outbox_subcommands[1])
        outbox_options.action = OutboxAction::status;
      else
        outbox_options.action = OutboxAction::retry_dead;
      return outbox_command(outbox_config, outbox_options);
    }
    if (*queue) {
      queue_options.action = *queue_backup ? QueueAction::backup : QueueAction::status;
      return queue_command(queue_config, queue_options);
    }
    if (*plugin_new)
      return plugin_new_command(new_plugin_name, new_plugin_dir);
    if (*plugins)
      return plugins_command(plugins_config);
    if (*version) {
      std::cout << "warren " << WARREN_VERSION << " (plugin ABI " << WARREN_ABI_MAJOR << "."
                << WARREN_ABI_MINOR << ")\n";
      return kExitOk;
    }
  } catch (const std::exception& error) {
    warren::observability::log_error(std::string("warren: unexpected failure: ") + error.what());
    return kExitRuntimeFailure;
  }
  return kExitBadUsageOrConfig;
}
