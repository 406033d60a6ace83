// `warren check -c FILE`: validates the config and loads every plugin (running each handler's
// constructor), connecting to nothing. Exit 0 when all is well, 2 otherwise.
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/published_exchanges.h"
#include "config/config_loader.h"
#include "observability/log.h"
#include "observability/metrics.h"
#include "plugin/plugin_library.h"
#include "runtime/host.h"

namespace warren::cli {
namespace {

// "isolation thread (4 threads)" or "isolation process (2 processes)": where the handler runs.
std::string isolation_summary(const config::WorkerConfig& worker) {
  if (worker.isolation == config::WorkerConfig::Isolation::process) {
    return "isolation process (" + std::to_string(worker.processes) + " process" +
           (worker.processes == 1 ? ")" : "es)");
  }
  return "isolation thread (" + std::to_string(worker.concurrency) + " thread" +
         (worker.concurrency == 1 ? ")" : "s)");
}

}  // namespace

int check_command(const ConfigOptions& options) {
  return check_config(options, false);
}

int check_config(const ConfigOptions& options, bool quiet) {
  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
  observability::configure_logging("warn", observability::LogFormat::text);
  observability::Metrics metrics(published_exchange_labels(*config));
  runtime::Host host(*config, metrics, nullptr);
  try {
    host.load_workers();
  } catch (const plugin::PluginLoadError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadUsageOrConfig;
  }
  // Not errors (the host runs), but worth fixing: e.g. a delivery limit that comes before the
  // crash accounting's max_crashes.
  for (const auto& warning : config::config_warnings(*config))
    std::cerr << "warning: " << warning << "\n";
  if (quiet)
    return kExitOk;
  std::cout << options.file << ": OK: " << config->exchanges.size() << " exchange(s), "
            << config->queues.size() << " queue(s), " << config->workers.size() << " worker(s)\n";
  for (const auto& loaded : host.loaded_plugins()) {
    const config::WorkerConfig& worker = *config->find_worker(loaded.worker);
    std::cout << "  worker " << loaded.worker << ": plugin " << loaded.info.name << " ";
    // The host never loads a process-isolated plugin (its children do): no version nor ABI
    // to show, only the file the children will load.
    if (worker.isolation == config::WorkerConfig::Isolation::process) {
      std::cout << "(not loaded by the host)";
    } else {
      std::cout << loaded.info.version << " (ABI " << loaded.info.abi_major << "."
                << loaded.info.abi_minor << ")";
    }
    std::cout << " from " << loaded.info.file.string() << ", " << isolation_summary(worker) << "\n";
  }
  return kExitOk;
}

}  // namespace warren::cli
