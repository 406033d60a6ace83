// See config_source.h.
#include "cli/config_source.h"

#include <cstdlib>
#include <iostream>

#include "config/config_loader.h"

namespace warren::cli {

std::optional<config::Config> load_config_for_cli(const ConfigOptions& options) {
  try {
    config::Config config = config::load_config(options.file);
    if (const char* uri = std::getenv("WARREN_BROKER_URI"); uri != nullptr && *uri != '\0') {
      config.broker.uris = {uri};
    }
    if (!options.plugin_dir.empty()) {
      std::filesystem::path dir(options.plugin_dir);
      if (!dir.is_absolute())
        dir = std::filesystem::absolute(dir);
      config.host.plugin_dir = dir.lexically_normal();
    }
    return config;
  } catch (const config::ConfigError& error) {
    for (const auto& problem : error.problems())
      std::cerr << problem.to_string() << "\n";
    std::cerr << options.file << ": " << error.problems().size() << " problem"
              << (error.problems().size() == 1 ? "" : "s") << " in the configuration\n";
    return std::nullopt;
  }
}

}  // namespace warren::cli
