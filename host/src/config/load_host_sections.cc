// Loading of [host], [log] and [metrics]: the host's identity, logging and metrics endpoint.
#include <unistd.h>

#include <charconv>
#include <climits>
#include <string_view>
#include <variant>

#include "config/config_files.h"
#include "config/env_expansion.h"
#include "config/loader_sections.h"

namespace warren::config {
namespace {

constexpr const char* kDefaultPluginDir = "/usr/lib/warren/plugins";
constexpr const char* kDefaultStateDir = "/var/lib/warren";

// systemd's $STATE_DIRECTORY (the first, when StateDirectory= names several), else
// /var/lib/warren.
std::filesystem::path default_state_dir(const LoadContext& context) {
  const char* from_systemd = context.environment("STATE_DIRECTORY");
  if (from_systemd == nullptr || *from_systemd == '\0')
    return kDefaultStateDir;
  const std::string_view list(from_systemd);
  return std::filesystem::path(std::string(list.substr(0, list.find(':'))));
}

// `state_dir` takes ${VAR:-default} like worker settings and resolves against the config file's
// directory.
void read_state_dir(TableReader& table, const LoadContext& context, HostConfig& host) {
  std::string text;
  if (!table.read_non_empty_string("state_dir", text))
    return;
  auto expanded =
      expand_environment(text, [&](const char* name) { return context.environment(name); });
  if (const auto* error = std::get_if<ExpansionError>(&expanded)) {
    table.report("state_dir", error->message);
  } else if (std::get<std::string>(expanded).empty()) {
    table.report("state_dir", "is empty once the environment is expanded: " + in_quotes(text));
  } else {
    host.state_dir = context.resolve(std::get<std::string>(expanded));
  }
}

std::string machine_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') {
    return "warren";
  }
  return name;
}

// "host:port" or "[v6]:port", port 1..65535. Empty when valid, else what is wrong.
std::string listen_address_problem(std::string_view listen) {
  std::size_t colon = std::string_view::npos;
  if (!listen.starts_with('[')) {
    colon = listen.rfind(':');
  } else if (const std::size_t close = listen.find("]:"); close != std::string_view::npos) {
    colon = close + 1;
  }
  if (colon == std::string_view::npos || colon == 0 || listen.starts_with("[]")) {
    return "must be host:port (e.g. \"127.0.0.1:9464\" or \"[::1]:9464\"), got " +
           in_quotes(listen);
  }
  const std::string_view host = listen.substr(0, colon);
  const std::string_view port = listen.substr(colon + 1);
  if (host.find(':') != std::string_view::npos && !host.starts_with('[')) {
    return "must be host:port with an IPv6 host in brackets (\"[::1]:9464\"), got " +
           in_quotes(listen);
  }
  int number = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || error != std::errc() || end != port.data() + port.size() || number < 1 ||
      number > 65535) {
    return "the port must be a number from 1 to 65535, got " + in_quotes(listen);
  }
  return {};
}

}  // namespace

void load_host_section(TableReader& root, const LoadContext& context, Config& config) {
  HostConfig& host = config.host;
  host.name = machine_hostname();
  host.plugin_dir = kDefaultPluginDir;
  host.state_dir = default_state_dir(context);
  read_sub_table(root, "host", [&host, &context](TableReader& table) {
    table.read_non_empty_string("name", host.name);
    if (table.read_path("plugin_dir", host.plugin_dir) && !host.plugin_dir.is_absolute()) {
      table.report("plugin_dir",
                   "must be an absolute path (plugins are only loaded from absolute paths), got " +
                       in_quotes(host.plugin_dir.string()));
    }
    table.read_duration("shutdown_timeout", host.shutdown_timeout);
    read_state_dir(table, context, host);
    if (table.read_path("pid_file", host.pid_file) && !host.pid_file.is_absolute()) {
      table.report("pid_file",
                   "must be an absolute path (`warren reload` finds the host by it), "
                   "got " +
                       in_quotes(host.pid_file.string()));
    }
  });
}

void load_log_section(TableReader& root, const LoadContext& /*context*/, Config& config) {
  LogConfig& log = config.log;
  read_sub_table(root, "log", [&log](TableReader& table) {
    table.read_one_of("level", log.level,
                      {"trace", "debug", "info", "warn", "error", "critical", "off"});
    table.read_enum<LogConfig::Format>(
        "format", log.format,
        {{"text", LogConfig::Format::text}, {"json", LogConfig::Format::json}});
  });
}

void load_metrics_section(TableReader& root, const LoadContext& context, Config& config) {
  MetricsConfig& metrics = config.metrics;
  read_sub_table(root, "metrics", [&metrics, &context](TableReader& table) {
    table.read_bool("enabled", metrics.enabled);
    if (table.read_non_empty_string("listen", metrics.listen)) {
      if (std::string problem = listen_address_problem(metrics.listen); !problem.empty()) {
        table.report("listen", std::move(problem));
      } else if (metrics.enabled && metrics.listen.starts_with('[') && !context.metrics_ipv6) {
        // Refused here so that `warren check` says it, not the endpoint when `warren run` starts.
        // Built by appending: GCC 12 at -O3 raises a false -Wrestrict on "literal" + std::string.
        std::string why =
            "the metrics endpoint's HTTP server (the civetweb library Warren is linked with) has "
            "no IPv6 support, so it cannot listen on ";
        why += in_quotes(metrics.listen);
        why += "; use an IPv4 address such as \"127.0.0.1:9464\" or \"0.0.0.0:9464\"";
        table.report("listen", std::move(why));
      }
    }
    const bool has_user = table.read_non_empty_string("user", metrics.user);
    const bool has_password_file = table.read_path("password_file", metrics.password_file);
    if (has_user && !has_password_file && table.find("password_file") == nullptr) {
      table.report("user", "basic authentication needs a password: set password_file too");
    }
    if (has_password_file) {
      metrics.password_file = context.resolve(metrics.password_file);
      if (!has_user && table.find("user") == nullptr) {
        table.report("password_file", "basic authentication needs a user: set user too");
      }
      read_secret_file(table, "password_file", metrics.password_file, metrics.password);
    }
  });
}

}  // namespace warren::config
