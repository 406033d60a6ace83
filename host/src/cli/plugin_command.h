// `warren plugin new NAME [DIR]` and `warren plugins -c FILE` (plugin_command.cc).
#pragma once

#include <string>

#include "cli/config_source.h"

namespace warren::cli {

// Writes the plugin template into DIR (default ./NAME) with NAME filled in.
int plugin_new_command(const std::string& name, const std::string& directory);
// Lists each worker's plugin and whether it would load; exit 0 when all load, else 2.
int plugins_command(const ConfigOptions& options);

}  // namespace warren::cli
