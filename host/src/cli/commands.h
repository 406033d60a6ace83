// The verbs of the `warren` command line. Each returns the process exit code (exit_codes.h).
#pragma once

#include <string>
#include <vector>

#include "cli/config_source.h"

namespace warren::cli {

struct PublishOptions {
  std::string exchange;
  std::string routing_key;
  std::string body;
  std::string body_file;
  std::string content_type;
  std::string message_id;
  std::vector<std::string> headers;  // NAME=VALUE
};

int run_command(const ConfigOptions& options);
int publish_command(const ConfigOptions& options, const PublishOptions& publish);
int topology_apply_command(const ConfigOptions& options, bool dry_run);
int check_command(const ConfigOptions& options);

}  // namespace warren::cli
