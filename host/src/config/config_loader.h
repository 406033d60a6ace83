// TOML -> Config. Unknown keys, wrong types, bad values and dangling references are errors.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/config_error.h"

namespace warren::config {

// Reads the environment (WARREN_BROKER_PASSWORD); injectable for tests.
using EnvironmentLookup = std::function<const char*(const char*)>;

struct LoadOptions {
  EnvironmentLookup environment;  // default: std::getenv
};

// Loads and validates `file`. Throws ConfigError listing every problem found.
Config load_config(const std::filesystem::path& file, const LoadOptions& options = {});

// Same, from text; `source_name` is used in messages (and relative paths are not resolved).
Config parse_config(std::string_view toml_text, const std::string& source_name,
                    const LoadOptions& options = {});

// Warnings that do not stop the host (a password inside the uri...), for the caller to log.
std::vector<std::string> config_warnings(const Config& config);

}  // namespace warren::config
