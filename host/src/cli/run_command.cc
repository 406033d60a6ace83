// `warren run -c FILE`: the host process. Exit 0 after a graceful stop, 2 on a bad config or a
// refused plugin, 1 when the broker or topology fails or the metrics endpoint cannot listen.
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/malloc_tuning.h"
#include "cli/pid_file.h"
#include "cli/published_exchanges.h"
#include "cli/reload_source.h"
#include "cli/systemd_notify.h"
#include "cli/transport_factory.h"
#include "config/config_loader.h"
#include "observability/health.h"
#include "observability/http_server.h"
#include "observability/log.h"
#include "observability/metrics.h"
#include "outbox/outbox_services.h"
#include "plugin/plugin_library.h"
#include "runtime/crash_watch.h"
#include "runtime/host.h"
#include "runtime/shutdown.h"

namespace warren::cli {

int run_command(const ConfigOptions& options) {
  tune_malloc_for_the_host();
  // Before any thread exists, so that every thread inherits the blocked signal mask.
  runtime::ShutdownSignal shutdown;
  runtime::SignalWatcher signals(shutdown);

  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
  observability::configure_logging(config->log.level,
                                   config->log.format == config::LogConfig::Format::json
                                       ? observability::LogFormat::json
                                       : observability::LogFormat::text);
  for (const auto& warning : config::config_warnings(*config))
    observability::log_warn(warning);

  observability::Metrics metrics(published_exchange_labels(*config));
  observability::Health health;
  runtime::Host host(*config, metrics, &health);
  health.set_readiness_probe([&host] { return host.ready(); });
  health.set_not_ready_reasons([&host] { return host.not_ready_reasons(); });

  // /metrics, /healthz, /readyz: up before the plugins load, so probes see "not ready" meanwhile.
  MetricsEndpoint metrics_endpoint{metrics, health, nullptr};
  try {
    start_metrics_endpoint(metrics_endpoint, config->metrics);
  } catch (const observability::MetricsServerError& error) {
    observability::log_error(error.what());
    return kExitRuntimeFailure;
  }

  try {
    host.load_workers();
  } catch (const plugin::PluginLoadError& error) {
    observability::log_error(error.what());
    return kExitBadUsageOrConfig;
  }

  // For `warren reload` outside systemd: written once the plugins loaded, removed at exit.
  std::optional<PidFile> pid_file;
  try {
    pid_file.emplace(config->host.pid_file);
  } catch (const std::runtime_error& error) {
    observability::log_error(error.what());
    return kExitRuntimeFailure;
  }

  // Crash accounting: blames what a crashed previous run left in its handlers, then journals
  // this run's. Never fatal (off with a warning when it cannot run).
  const std::unique_ptr<runtime::CrashWatch> crash_watch =
      runtime::CrashWatch::start(*config, metrics);
  host.set_crash_watch(crash_watch.get());

  // Outbox relays ([[outbox]]) and idempotent workers' stores; stopped once the host stopped.
  outbox::OutboxServices outbox_services(*config, metrics, health);
  outbox_services.attach_inbox_stores(host);

  // Under systemd (Type=notify units): READY=1 once consuming, STOPPING=1 when a stop begins.
  std::optional<ServiceStatusReporter> systemd_status;
  if (auto notifier = SystemdNotifier::from_environment())
    systemd_status.emplace(std::move(*notifier), shutdown, [&host] { return host.ready(); });

  bool all_settled = false;
  // Out here, not in the try: with handlers still running it must outlive them (below), and one
  // may run on the transport's own reading thread (issue 17), which its destructor joins.
  std::unique_ptr<transport::Transport> transport;
  try {
    transport = make_transport(*config, metrics, health);
    // SIGHUP: the config read again, applied where it changed (host_reload.cc).
    host.set_reload_source(reload_source(options, metrics_endpoint, *transport));
    // Relays start once the topology they publish into is declared.
    all_settled = host.run(*transport, shutdown, [&] { outbox_services.start_relays(); });
    outbox_services.stop();
    // Before the transport that /readyz asks about goes away.
    if (metrics_endpoint.server)
      metrics_endpoint.server->stop();
  } catch (const transport::TransportError& error) {
    observability::log_error(std::string("cannot run: ") + error.what());
    if (crash_watch)
      crash_watch->stop();  // an exit, not a crash
    return kExitRuntimeFailure;
  }
  // Stopped, not crashed: whatever is still in a handler now is no crash suspect.
  if (crash_watch)
    crash_watch->stop();
  if (!all_settled) {
    // Handlers are still running plugin code: destroying their objects under them would crash.
    observability::flush_logs();
    std::_Exit(kExitOk);
  }
  return kExitOk;
}

}  // namespace warren::cli
