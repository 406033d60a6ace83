// `warren reload -c FILE`: checks FILE as `warren check` does (a config it would refuse is never
// sent: exit 2, the host untouched), then signals the running host to reload it (SIGHUP), found
// by systemd's $MAINPID (ExecReload=) or [host] pid_file. The host applies it on its own: the
// outcome is in its log and in warren_config_reloads_total. Exit 1 when no host can be signalled.
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/pid_file.h"

namespace warren::cli {
namespace {

std::optional<pid_t> systemd_main_pid() {
  const char* text = std::getenv("MAINPID");
  if (text == nullptr || *text == '\0')
    return std::nullopt;
  char* end = nullptr;
  const long pid = std::strtol(text, &end, 10);
  if (*end != '\0' || pid <= 1)
    return std::nullopt;
  return static_cast<pid_t>(pid);
}

}  // namespace

int reload_command(const ConfigOptions& options) {
  if (const int checked = check_config(options, true); checked != kExitOk)
    return checked;
  std::optional<pid_t> pid = systemd_main_pid();
  std::string where = "$MAINPID";
  if (!pid) {
    const auto config = load_config_for_cli(options);
    if (!config)
      return kExitBadUsageOrConfig;
    if (config->host.pid_file.empty()) {
      std::cerr << "warren reload: cannot find the running host: not under systemd ($MAINPID is "
                   "unset) and "
                << options.file << " sets no [host] pid_file\n";
      return kExitRuntimeFailure;
    }
    std::string why;
    pid = read_pid_file(config->host.pid_file, why);
    if (!pid) {
      std::cerr << "warren reload: cannot find the running host: " << why << "\n";
      return kExitRuntimeFailure;
    }
    where = config->host.pid_file.string();
  }
  if (::kill(*pid, SIGHUP) != 0) {
    std::cerr << "warren reload: cannot signal process " << *pid << " (from " << where
              << "): " << std::strerror(errno) << "\n";
    return kExitRuntimeFailure;
  }
  std::cout << "sent SIGHUP to warren (pid " << *pid << ", from " << where << "): it reloads "
            << options.file << "; its log and warren_config_reloads_total say how it went\n";
  return kExitOk;
}

}  // namespace warren::cli
