// load_config / parse_config: TOML text -> validated Config, or one ConfigError listing every
// problem. The sections are read in dependency order (see loader_sections.h).
#include "config/config_loader.h"

#include <cstdlib>

#include <toml++/toml.h>

#include "config/config_files.h"
#include "config/consumer_timeout_warnings.h"
#include "config/crash_limit_warnings.h"
#include "config/loader_sections.h"

namespace warren::config {
namespace {

const char* lookup_process_environment(const char* name) {
  return std::getenv(name);
}

Config parse_document(std::string_view toml_text, const std::string& source_name,
                      const LoadOptions& options, const std::filesystem::path& base_dir) {
  ProblemList problems(source_name);
  problems.collect_accepted_keys(options.accepted_keys);
  toml::table document;
  try {
    document = toml::parse(toml_text, std::string_view(source_name));
  } catch (const toml::parse_error& error) {
    problems.add(error.source(), "", "invalid TOML: " + std::string(error.description()));
    throw ConfigError(problems.sorted());
  }

  const LoadContext context{
      problems, base_dir,
      options.environment ? options.environment : EnvironmentLookup(&lookup_process_environment),
      options.metrics_ipv6};
  Config config;
  config.file = source_name;
  TableReader root(document, "", problems);
  load_host_section(root, context, config);
  load_log_section(root, context, config);
  load_metrics_section(root, context, config);
  load_broker_section(root, context, config);
  load_exchanges(root, context, config);
  load_queues(root, context, config);
  load_workers(root, context, config);
  load_outboxes(root, context, config);
  root.report_unknown_keys();

  if (!problems.empty()) {
    throw ConfigError(problems.sorted());
  }
  return config;
}

}  // namespace

Config load_config(const std::filesystem::path& file, const LoadOptions& options) {
  std::string os_error;
  const std::optional<std::string> text = read_text_file(file, os_error);
  if (!text) {
    throw ConfigError({ConfigProblem{
        file.string(), 0, 0, "",
        "cannot read the configuration file " + in_quotes(file.string()) + ": " + os_error}});
  }
  return parse_document(*text, file.string(), options, file.parent_path());
}

Config parse_config(std::string_view toml_text, const std::string& source_name,
                    const LoadOptions& options) {
  return parse_document(toml_text, source_name, options, {});
}

std::vector<std::string> config_warnings(const Config& config) {
  std::vector<std::string> warnings;
  if (config.broker.password_in_uri) {
    warnings.push_back(
        config.file.string() +
        ": broker: a broker URI holds a password, readable by anyone who can read this file; "
        "move it to broker.password_file or the WARREN_BROKER_PASSWORD environment variable");
  }
  for (std::string& warning : crash_limit_warnings(config))
    warnings.push_back(std::move(warning));
  for (std::string& warning : consumer_timeout_warnings(config))
    warnings.push_back(std::move(warning));
  return warnings;
}

}  // namespace warren::config
