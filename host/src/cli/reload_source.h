// What `warren run` gives its host to reload with (runtime::ReloadSource): the config file read
// again exactly as at start (config_source.h), refused when it changes something only a restart
// can, and, once the workers are reloaded, [log] level and [metrics] applied.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/config_source.h"
#include "config/config.h"
#include "observability/health.h"
#include "observability/http_server.h"
#include "observability/metrics.h"
#include "runtime/host.h"

namespace warren::cli {

// The changes a reload cannot make, a line each ("[broker] transport: restart warren to change
// it"): empty when `reloaded` can be applied to a host running `running`.
std::vector<std::string> restart_only_changes(const config::Config& running,
                                              const config::Config& reloaded);

// The metrics endpoint of `warren run`, started again on a reload that changes [metrics].
struct MetricsEndpoint {
  observability::Metrics& metrics;
  observability::Health& health;
  std::unique_ptr<observability::MetricsServer> server;  // null while off
};

// Starts the endpoint `metrics` describes in `endpoint.server` (nothing when disabled).
// Throws observability::MetricsServerError.
void start_metrics_endpoint(MetricsEndpoint& endpoint, const config::MetricsConfig& metrics);

// `first`: run()'s transport. A reload with new broker credentials hands them to it and to every
// transport a reload made that still lives, for their next connections.
runtime::ReloadSource reload_source(const ConfigOptions& options, MetricsEndpoint& endpoint,
                                    transport::Transport& first);

}  // namespace warren::cli
