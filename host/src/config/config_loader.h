// TOML -> Config. Unknown keys, wrong types, bad values and dangling references are errors.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/config_error.h"
#include "config/problem_list.h"

namespace warren::config {

// Reads the environment (WARREN_BROKER_PASSWORD); injectable for tests.
using EnvironmentLookup = std::function<const char*(const char*)>;

struct LoadOptions {
  EnvironmentLookup environment;  // default: std::getenv
  // When set, receives every key each table of the file accepts (tables by their path without
  // array indexes: "workers.retry"; the top level is ""), whether or not the file sets it: what
  // tests hold docs/configuration.md against, so the reference cannot miss a key.
  AcceptedKeys* accepted_keys = nullptr;
  // Whether the metrics endpoint can listen on IPv6. The loader links no HTTP server, so the
  // caller says (the CLI: observability::MetricsServer::supports_ipv6()); when false, an IPv6
  // [metrics] listen is refused at load, where `warren check` shows it, not at `warren run`'s
  // start.
  bool metrics_ipv6 = true;
};

// Loads and validates `file`. Throws ConfigError listing every problem found.
Config load_config(const std::filesystem::path& file, const LoadOptions& options = {});

// Same, from text; `source_name` is used in messages (and relative paths are not resolved).
Config parse_config(std::string_view toml_text, const std::string& source_name,
                    const LoadOptions& options = {});

// Warnings that do not stop the host (a password inside the uri...), for the caller to log.
std::vector<std::string> config_warnings(const Config& config);

}  // namespace warren::config
