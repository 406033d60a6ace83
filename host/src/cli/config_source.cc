// See config_source.h.
#include "cli/config_source.h"

#include <cstdlib>
#include <iostream>

#include "broker/tls_client_files.h"
#include "config/amqp_uri.h"
#include "config/config_files.h"
#include "config/config_loader.h"
#include "observability/http_server.h"

namespace warren::cli {
namespace {

// Like [broker] password_file: the whole file, trailing newlines stripped, never empty, readable
// by its owner only (secret_file_exposure).
bool read_broker_password_file(const std::filesystem::path& file, config::BrokerConfig& broker,
                               std::ostream& problems) {
  // Checked before reading, as the loader does: /dev/zero must not be read for ever. (A file
  // that is not there is said so below.)
  std::error_code not_there;
  if (std::optional<std::string> exposure = std::filesystem::exists(file, not_there)
                                                ? config::secret_file_exposure(file)
                                                : std::nullopt) {
    problems << "--broker-password-file " << *exposure << "\n";
    return false;
  }
  std::string os_error;
  std::optional<std::string> content = config::read_text_file(file, os_error);
  while (content && !content->empty() && (content->back() == '\n' || content->back() == '\r')) {
    content->pop_back();
  }
  if (!content || content->empty()) {
    problems << "--broker-password-file " << file.string() << ": "
             << (content ? "the file is empty" : "cannot read it: " + os_error)
             << "; put the broker password in it (a systemd unit loads it with "
                "LoadCredential=)\n";
    return false;
  }
  broker.password = std::move(*content);
  broker.password_file = file;
  return true;
}

// WARREN_BROKER_URI, checked like the file's URIs and stored without its password (the stored
// URIs are logged, and an unparsable one would fail much later, quoted whole). Its password is
// used unless WARREN_BROKER_PASSWORD or password_file gives one, the order the loader follows.
bool apply_broker_uri_override(std::string_view uri, config::BrokerConfig& broker,
                               std::ostream& problems) {
  std::string why;
  std::optional<config::AmqpUri> parsed = config::parse_amqp_uri(uri, why);
  if (!parsed) {
    problems << "WARREN_BROKER_URI: must be " << config::kAmqpUriSyntax << ": " << why
             << "; fix the variable or unset it to use [broker] uri\n";
    return false;
  }
  broker.uris = {std::move(parsed->without_password)};
  const char* password_variable = std::getenv("WARREN_BROKER_PASSWORD");
  const bool password_elsewhere =
      (password_variable != nullptr && *password_variable != '\0') || !broker.password_file.empty();
  if (parsed->password && !password_elsewhere)
    broker.password = std::move(*parsed->password);
  return true;
}

}  // namespace

std::optional<config::Config> load_config_for_cli(const ConfigOptions& options) {
  return load_config_for_cli(options, std::cerr);
}

std::optional<config::Config> load_config_for_cli(const ConfigOptions& options,
                                                  std::ostream& problems) {
  try {
    config::LoadOptions load_options;
    load_options.metrics_ipv6 = observability::MetricsServer::supports_ipv6();
    config::Config config = config::load_config(options.file, load_options);
    if (const char* uri = std::getenv("WARREN_BROKER_URI"); uri != nullptr && *uri != '\0') {
      if (!apply_broker_uri_override(uri, config.broker, problems))
        return std::nullopt;
    }
    if (!options.plugin_dir.empty()) {
      std::filesystem::path dir(options.plugin_dir);
      if (!dir.is_absolute())
        dir = std::filesystem::absolute(dir);
      config.host.plugin_dir = dir.lexically_normal();
    }
    if (!options.broker_password_file.empty() &&
        !read_broker_password_file(options.broker_password_file, config.broker, problems)) {
      return std::nullopt;
    }
    // Loaded once here as each connection will load them: a key that is not the certificate's
    // stops every verb at once (exit 2), instead of failing every connection attempt of `run`.
    const config::TlsConfig& tls = config.broker.tls;
    if (!tls.ca_file.empty() || !tls.cert_file.empty()) {
      if (std::optional<std::string> problem = broker::tls_client_files_problem(tls)) {
        problems << options.file << ": [broker] " << *problem << "\n";
        return std::nullopt;
      }
    }
    return config;
  } catch (const config::ConfigError& error) {
    for (const auto& problem : error.problems())
      problems << problem.to_string() << "\n";
    problems << options.file << ": " << error.problems().size() << " problem"
             << (error.problems().size() == 1 ? "" : "s") << " in the configuration\n";
    return std::nullopt;
  }
}

}  // namespace warren::cli
