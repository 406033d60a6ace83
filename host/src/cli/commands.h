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

struct DlqOptions {
  std::string verb;  // list|peek|replay|purge
  std::string worker;
  std::string queue;  // overrides the worker's dead-letter queue
  std::size_t limit = 0;
  std::vector<std::string> where;  // HEADER=VALUE
  bool dry_run = false;
  double rate = 0;  // replay: messages a second, 0: as fast as confirms allow
  bool yes = false;
  // replay: to the original exchange and routing key (every queue bound there) rather than to
  // the worker's queue alone
  bool original_route = false;
};

int run_command(const ConfigOptions& options);
int publish_command(const ConfigOptions& options, const PublishOptions& publish);
int topology_apply_command(const ConfigOptions& options, bool dry_run);
int dlq_command(const ConfigOptions& config, const DlqOptions& options);
int check_command(const ConfigOptions& options);
// What `warren check` does, without its report when `quiet` (`warren reload` checks first).
int check_config(const ConfigOptions& options, bool quiet);
// `warren reload -c FILE`: checks FILE like `warren check`, then sends SIGHUP to the running host
// (systemd's $MAINPID, else the process in [host] pid_file).
int reload_command(const ConfigOptions& options);

}  // namespace warren::cli
