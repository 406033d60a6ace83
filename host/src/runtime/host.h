// The host: the workers of a config, each with its plugin's handler and a dispatcher, wired to a
// transport; started together and stopped gracefully (like .NET's Generic Host), and reloaded
// without a restart (host_reload.cc: SIGHUP re-reads the config; workers added, removed or
// changed are started and drained one by one, the others left alone).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "isolation/worker_cgroups.h"
#include "isolation/worker_spawn.h"
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

// A reloaded config that must not be applied: `problems`, a line each (file:line:col first when
// there is one), are logged and nothing changes.
class ReloadRefused : public std::runtime_error {
 public:
  explicit ReloadRefused(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const noexcept { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// What the host needs from its composition root (cli/run_command.cc) to reload.
struct ReloadSource {
  // Reads and validates the config file again, as `warren check` does (the plugins excepted:
  // the host loads them). Throws ReloadRefused, also for a change only a restart can make.
  std::function<config::Config(const config::Config& running)> load;
  // A transport for the workers a reload starts (added, or the new instance of a changed one).
  std::function<std::shared_ptr<transport::Transport>(const config::Config&)> make_transport;
  // After the workers: what else the reload changes ([log], [metrics], broker credentials).
  std::function<void(const config::Config& running, const config::Config& reloaded)> applied;
};

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
  // While it runs, a reload request (ShutdownSignal::request_reload, SIGHUP) runs reload().
  bool run(transport::Transport& transport, ShutdownSignal& shutdown,
           const std::function<void()>& on_started = {});

  // Before run(): how to reload. Without it, a reload request is logged and ignored.
  void set_reload_source(ReloadSource source) { reload_source_ = std::move(source); }
  // Re-reads the config and applies what changed (host_reload.cc). Never throws: a refused
  // reload changes nothing, is logged and counted (warren_config_reloads_total{result="error"}).
  // True when applied. On the thread that runs run(), while it runs.
  bool reload();

  // Readiness as /readyz reports it: started, not stopping, and the transport is ready.
  bool ready() const noexcept;
  // Why not, a line each (empty when ready).
  std::vector<std::string> not_ready_reasons() const;

 private:
  struct Worker;
  struct Generation;
  struct ReloadPlan;

  std::unique_ptr<Worker> make_worker(std::shared_ptr<const config::Config> owner,
                                      const config::WorkerConfig& spec,
                                      std::shared_ptr<const plugin::PluginLibrary> library);
  // A refused plugin, said of the worker that asked for it and where the configuration declares
  // that worker: "worker 'emails' (conf/warren.toml:80:1): not found: ...".
  static plugin::PluginLoadError refusal_for(const config::WorkerConfig& spec,
                                             const plugin::PluginLoadError& refusal);
  // isolation = "process": the worker's runner (the host never loads its plugin). Throws
  // PluginLoadError when the plugin file cannot be read or warren-worker is missing.
  void make_process_runner(Worker& worker, const std::filesystem::path& plugin_dir);
  // worker_cgroups_, made the first time.
  isolation::WorkerCgroups* worker_cgroups();
  std::filesystem::path owner_plugin_dir(const Worker& worker);
  // The worker's dispatcher on its generation's transport, started; its subscription.
  transport::Subscription start_dispatcher(Worker& worker, std::size_t& next_crash_slot);
  // Tells its handlers to stop (its consumer stopped already), waits for them and for its inbox
  // to be handed back until `deadline`. False when some still run.
  bool drain_worker(Worker& worker, std::chrono::steady_clock::time_point deadline);
  // Unloads drained workers (their plugin with the last of them) and closes the transports no
  // worker uses any more.
  void retire(std::vector<std::unique_ptr<Worker>> drained);
  ReloadPlan prepare_reload();
  void apply_reload(ReloadPlan& plan);
  // Reports exchanges and queues `next` no longer has; declares those it adds unless `declared`
  // (the transport of the workers the reload starts declares them).
  void apply_topology(const config::Config& running, const config::Config& next, bool declared);
  void count_reload(bool ok);

  std::shared_ptr<const config::Config> config_;  // the running one
  observability::Metrics& metrics_;
  observability::Health* health_;
  CrashWatch* crash_watch_ = nullptr;
  // warren-worker, held open from the first worker with isolation = "process" on, so that every
  // child runs the binary of this host's version (isolation/worker_spawn.h).
  std::unique_ptr<isolation::HeldExecutable> worker_binary_;
  // memory_max of worker processes: a cgroup v2 leaf per child when the host has a delegated
  // cgroup, else RLIMIT_DATA (isolation/worker_cgroups.h). Made with the first worker with
  // isolation = "process" and a memory_max; decided, and logged, when its first child starts.
  std::unique_ptr<isolation::WorkerCgroups> worker_cgroups_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // Workers whose handlers outlived the shutdown timeout of a reload: kept, never destroyed
  // under a running handler.
  std::vector<std::unique_ptr<Worker>> abandoned_;
  ReloadSource reload_source_;
  std::size_t next_crash_slot_ = 0;
  // The transports in use, the first one run()'s: read by /readyz while a reload changes them.
  mutable std::mutex generations_mutex_;
  std::vector<std::shared_ptr<Generation>> generations_;
  // Workers in a crash loop (process_runner.h), by runner: why, for /readyz.
  std::map<const void*, std::string> crash_loops_;
  std::atomic<bool> running_{false};
};

}  // namespace warren::runtime
