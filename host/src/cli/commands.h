// The verbs of the `warren` command line. Each returns the process exit code (exit_codes.h).
#pragma once

#include "cli/config_source.h"

namespace warren::cli {

int run_command(const ConfigOptions& options);
int check_command(const ConfigOptions& options);

}  // namespace warren::cli
