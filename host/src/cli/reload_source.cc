// See reload_source.h.
#include "cli/reload_source.h"

#include <sstream>

#include "broker/rabbitmq_transport.h"
#include "cli/transport_factory.h"
#include "config/config_loader.h"
#include "observability/log.h"

namespace warren::cli {
namespace {

using Transport = config::BrokerConfig::Transport;

void restart_if(std::vector<std::string>& changes, bool changed, const std::string& what) {
  if (changed)
    changes.push_back(what + " changed: restart warren to apply it (a reload leaves it alone)");
}

bool same_outboxes(const std::vector<config::OutboxConfig>& a,
                   const std::vector<config::OutboxConfig>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].store != b[i].store || a[i].dsn != b[i].dsn ||
        a[i].exchange != b[i].exchange || a[i].batch != b[i].batch ||
        a[i].poll_interval != b[i].poll_interval || a[i].max_attempts != b[i].max_attempts ||
        a[i].backoff_initial != b[i].backoff_initial || a[i].backoff_max != b[i].backoff_max ||
        a[i].retention != b[i].retention)
      return false;
  }
  return true;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty())
      lines.push_back(line);
  }
  return lines;
}

void apply_metrics(MetricsEndpoint& endpoint, const config::MetricsConfig& running,
                   const config::MetricsConfig& reloaded) {
  if (running.enabled == reloaded.enabled && running.listen == reloaded.listen &&
      running.user == reloaded.user && running.password == reloaded.password)
    return;
  // A new address: the new server first, so that /metrics is never away; the same address (only
  // the credentials changed): the old one must let go of the port first.
  std::unique_ptr<observability::MetricsServer> previous = std::move(endpoint.server);
  if (previous && reloaded.listen == running.listen) {
    previous->stop();
    previous.reset();
  }
  try {
    start_metrics_endpoint(endpoint, reloaded);
    observability::log_info(reloaded.enabled
                                ? "reload: /metrics now on " + reloaded.listen
                                : std::string("reload: /metrics, /healthz and /readyz are off"));
  } catch (const observability::MetricsServerError& error) {
    observability::log_error(std::string("reload: the metrics endpoint cannot listen: ") +
                             error.what() +
                             (previous ? "; it stays on " + running.listen
                                       : std::string("; it stays off until a good reload")));
    endpoint.server = std::move(previous);
  }
  if (previous)
    previous->stop();
}

}  // namespace

std::vector<std::string> restart_only_changes(const config::Config& running,
                                              const config::Config& reloaded) {
  std::vector<std::string> changes;
  const config::BrokerConfig& a = running.broker;
  const config::BrokerConfig& b = reloaded.broker;
  restart_if(changes, a.transport != b.transport, "[broker] transport");
  if (a.transport == Transport::memory && running.workers.size() + reloaded.workers.size() > 0) {
    changes.emplace_back(
        "[broker] transport = \"memory\": its queues live in the process, so a reload cannot "
        "start workers beside them; restart warren instead");
  }
  restart_if(changes, a.uris != b.uris || a.vhost != b.vhost, "[broker] uri, hosts or vhost");
  restart_if(changes,
             a.tls.ca_file != b.tls.ca_file || a.tls.cert_file != b.tls.cert_file ||
                 a.tls.key_file != b.tls.key_file,
             "[broker] TLS files");
  restart_if(changes, a.sqlite.path != b.sqlite.path, "[broker.sqlite] path");
  restart_if(changes, a.postgres.dsn != b.postgres.dsn || a.postgres.schema != b.postgres.schema,
             "[broker.postgres] dsn or schema");
  restart_if(changes, running.host.name != reloaded.host.name, "[host] name");
  restart_if(changes, running.host.state_dir != reloaded.host.state_dir, "[host] state_dir");
  restart_if(changes, running.log.format != reloaded.log.format, "[log] format");
  restart_if(changes, !same_outboxes(running.outboxes, reloaded.outboxes), "[[outbox]]");
  return changes;
}

void start_metrics_endpoint(MetricsEndpoint& endpoint, const config::MetricsConfig& metrics) {
  if (!metrics.enabled)
    return;
  observability::MetricsServerOptions options;
  options.listen = metrics.listen;
  options.user = metrics.user;
  options.password = metrics.password;
  endpoint.server = std::make_unique<observability::MetricsServer>(
      endpoint.metrics, endpoint.health, std::move(options));
  try {
    endpoint.server->start();
  } catch (...) {
    endpoint.server.reset();
    throw;
  }
}

runtime::ReloadSource reload_source(const ConfigOptions& options, MetricsEndpoint& endpoint,
                                    transport::Transport& first) {
  // Every transport made so far (reloads run on one thread: no lock).
  auto made = std::make_shared<std::vector<std::weak_ptr<transport::Transport>>>();
  runtime::ReloadSource source;
  source.load = [options](const config::Config& running) {
    std::ostringstream problems;
    std::optional<config::Config> reloaded = load_config_for_cli(options, problems);
    if (!reloaded)
      throw runtime::ReloadRefused(lines_of(problems.str()));
    std::vector<std::string> restart = restart_only_changes(running, *reloaded);
    if (!restart.empty())
      throw runtime::ReloadRefused(std::move(restart));
    for (const auto& warning : config::config_warnings(*reloaded))
      observability::log_warn(warning);
    return std::move(*reloaded);
  };
  source.make_transport = [&endpoint, made](const config::Config& config) {
    std::shared_ptr<transport::Transport> transport =
        make_transport(config, endpoint.metrics, endpoint.health);
    std::erase_if(*made, [](const auto& weak) { return weak.expired(); });
    made->push_back(transport);
    return transport;
  };
  source.applied = [&endpoint, &first, made](const config::Config& running,
                                             const config::Config& reloaded) {
    if (running.broker.user != reloaded.broker.user ||
        running.broker.password != reloaded.broker.password) {
      std::vector<transport::Transport*> live{&first};
      for (const auto& weak : *made) {
        if (auto transport = weak.lock())
          live.push_back(transport.get());
      }
      for (transport::Transport* transport : live) {
        if (auto* rabbitmq = dynamic_cast<broker::RabbitMqTransport*>(transport))
          rabbitmq->set_credentials(reloaded.broker.user, reloaded.broker.password);
      }
      observability::log_info(
          "reload: new broker credentials, used from each connection's next reconnect (the "
          "connections up now stay)");
    }
    if (running.log.level != reloaded.log.level) {
      observability::configure_logging(reloaded.log.level,
                                       reloaded.log.format == config::LogConfig::Format::json
                                           ? observability::LogFormat::json
                                           : observability::LogFormat::text);
      observability::log_info("reload: log level now " + reloaded.log.level);
    }
    apply_metrics(endpoint, running.metrics, reloaded.metrics);
  };
  return source;
}

}  // namespace warren::cli
