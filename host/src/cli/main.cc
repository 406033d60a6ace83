// The `warren` command line: verbs and their options (CLI11). Exit codes in exit_codes.h.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "warren/abi.h"
#include "warren_version.h"

namespace {

void add_config_options(CLI::App& verb, warren::cli::ConfigOptions& options) {
  verb.add_option("-c,--config", options.file, "The TOML configuration file")->required();
  verb.add_option("--plugin-dir", options.plugin_dir,
                  "Load plugins from this directory instead of [host] plugin_dir");
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

  auto* version = app.add_subcommand("version", "Print the version and the plugin ABI");

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

  if (*run)
    return run_command(run_options);
  if (*check)
    return check_command(check_options);
  if (*version) {
    std::cout << "warren " << WARREN_VERSION << " (plugin ABI " << WARREN_ABI_MAJOR << "."
              << WARREN_ABI_MINOR << ")\n";
    return kExitOk;
  }
  return kExitBadUsageOrConfig;
}
