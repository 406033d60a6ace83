// The host: the workers of a config, each with its plugin's handler and a dispatcher, wired to a
// transport; started together and stopped gracefully (like .NET's Generic Host).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "plugin/handler_instance.h"
#include "plugin/plugin_library.h"
#include "runtime/crash_watch.h"
#include "runtime/dispatcher.h"
#include "runtime/shutdown.h"
#include "runtime/worker_context.h"
#include "transport/transport.h"

namespace warren::runtime {

class Host {
 public:
  Host(const config::Config& config, observability::Metrics& metrics,
       observability::Health* health);
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Loads each worker's plugin and constructs its handler. Throws plugin::PluginLoadError
  // naming the worker, the file and why.
  void load_workers();

  // What `warren plugins` and `warren check` show.
  struct WorkerPlugin {
    std::string worker;
    plugin::PluginInfo info;
  };
  std::vector<WorkerPlugin> loaded_plugins() const;

  // Makes a worker idempotent (issue: idempotent consumers). Before run(); `filter` outlives it.
  void set_duplicate_filter(const std::string& worker, DuplicateFilter* filter);

  // Crash accounting (crash_watch.h) for every worker, one journal slot per handler thread in
  // the config's order. Before run(); `watch` outlives it. Without it, none.
  void set_crash_watch(CrashWatch* watch) { crash_watch_ = watch; }

  // Starts the workers on `transport`, runs until `shutdown` is requested, then stops
  // gracefully within [host] shutdown_timeout. Returns true when every in-flight message was
  // settled in time (false: some handlers were still running; the caller should exit without
  // running destructors, and the broker requeues their messages).
  // `on_started` runs once the transport started (its topology is declared): the place for
  // whatever publishes into that topology, such as outbox relays.
  bool run(transport::Transport& transport, ShutdownSignal& shutdown,
           const std::function<void()>& on_started = {});

  // Readiness as /readyz reports it: started, not stopping, and the transport is ready.
  bool ready() const noexcept;
  // Why not, a line each (empty when ready).
  std::vector<std::string> not_ready_reasons() const;

 private:
  struct Worker;

  const config::Config& config_;
  observability::Metrics& metrics_;
  observability::Health* health_;
  CrashWatch* crash_watch_ = nullptr;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<transport::Transport*> transport_{nullptr};
  std::atomic<bool> running_{false};
};

}  // namespace warren::runtime
