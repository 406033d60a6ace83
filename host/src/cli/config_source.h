// Loads the config a verb works on: the file, then the command line and environment overrides
// (WARREN_BROKER_URI replaces [broker] uri/hosts, checked like them, its password used unless
// WARREN_BROKER_PASSWORD or password_file gives one; --plugin-dir replaces [host] plugin_dir;
// --broker-password-file replaces the broker password).
// Problems are printed as file:line:col lines; the caller exits 2.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "config/config.h"

namespace warren::cli {

struct ConfigOptions {
  std::string file;
  std::string plugin_dir;  // empty: as configured
  // The broker password, from a file (a systemd credential); wins over WARREN_BROKER_PASSWORD
  // and [broker] password_file. Empty: as configured.
  std::string broker_password_file;
};

// std::nullopt after printing every problem to `problems` (stderr by default), a line each.
std::optional<config::Config> load_config_for_cli(const ConfigOptions& options);
std::optional<config::Config> load_config_for_cli(const ConfigOptions& options,
                                                  std::ostream& problems);

}  // namespace warren::cli
