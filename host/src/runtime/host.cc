// See host.h. Shutdown order: readiness off, cancel consumers, let dispatchers finish and settle
// what is in flight, then close the transports (which makes sure settlements reached the broker).
// Reloading: host_reload.cc.
#include "runtime/host.h"

#include <map>

#include "config/problem_list.h"
#include "observability/log.h"
#include "runtime/host_worker.h"
#include "runtime/worker_binary.h"

namespace warren::runtime {

ReloadRefused::ReloadRefused(std::vector<std::string> problems)
    : std::runtime_error(problems.empty() ? "reload refused" : problems.front()),
      problems_(std::move(problems)) {}

Host::Host(const config::Config& config, observability::Metrics& metrics,
           observability::Health* health)
    // The caller owns the first config (it outlives the host); reloaded ones are the host's.
    : config_(std::shared_ptr<const config::Config>(), &config),
      metrics_(metrics),
      health_(health) {}

Host::~Host() = default;

std::unique_ptr<Host::Worker> Host::make_worker(
    std::shared_ptr<const config::Config> owner, const config::WorkerConfig& spec,
    std::shared_ptr<const plugin::PluginLibrary> library) {
  auto worker = std::make_unique<Worker>();
  worker->owner = std::move(owner);
  worker->config = &spec;
  worker->context =
      std::make_unique<WorkerContext>(spec.name, spec.plugin, spec.settings, metrics_,
                                      static_cast<std::size_t>(spec.metric_series_limit));
  try {
    if (spec.isolation == config::WorkerConfig::Isolation::process)
      make_process_runner(*worker, owner_plugin_dir(*worker));
    else
      worker->handler = std::make_unique<plugin::HandlerInstance>(library, *worker->context);
  } catch (const plugin::PluginLoadError& e) {
    throw refusal_for(spec, e);
  }
  return worker;
}

plugin::PluginLoadError Host::refusal_for(const config::WorkerConfig& spec,
                                          const plugin::PluginLoadError& refusal) {
  std::string worker = "worker '" + spec.name + "'";
  if (!spec.where.file.empty())
    worker += " (" + config::to_string(spec.where) + ")";
  return plugin::PluginLoadError(refusal.file(), worker + ": " + refusal.reason());
}

std::filesystem::path Host::owner_plugin_dir(const Worker& worker) {
  return worker.owner ? worker.owner->host.plugin_dir : config_->host.plugin_dir;
}

void Host::make_process_runner(Worker& worker, const std::filesystem::path& plugin_dir) {
  const config::WorkerConfig& spec = *worker.config;
  const std::filesystem::path file = plugin_dir / plugin::plugin_file_name(spec.plugin);
  worker.process_plugin.file = file;
  worker.process_plugin.name = spec.plugin;
  // The checks the host's loader makes before it opens a file (ownership, permissions, inside
  // the plugin directory), made here once so that a refused file stops the start as it does for
  // isolation = "thread"; then the bytes, read once, are what every child loads (the host never
  // maps them), whatever happens to the file on disk until a reload.
  worker.held_plugin = std::make_unique<plugin::HeldPluginFile>(plugin_dir, file);
  worker.process_plugin.content_hash = worker.held_plugin->content_hash();
  if (!worker_binary_) {
    try {
      worker_binary_ = std::make_unique<isolation::HeldExecutable>(find_worker_binary().string());
    } catch (const std::exception& e) {
      throw plugin::PluginLoadError(file, e.what());
    }
  }
  ProcessRunnerOptions options;
  options.worker = spec.name;
  options.process.worker = spec.name;
  options.process.plugin_path = file.string();
  options.process.plugin_fd = worker.held_plugin->fd();
  options.process.plugin_name = spec.plugin;
  options.process.settings = spec.settings;
  options.process.startup_timeout = spec.startup_timeout;
  options.process.soft_timeout = spec.soft_timeout;
  options.process.hard_timeout = spec.hard_timeout;
  options.process.memory_max = spec.memory_max;
  if (spec.memory_max > 0)
    options.process.cgroups = worker_cgroups();
  worker.runner =
      std::make_unique<ProcessRunner>(*worker_binary_, options, *worker.context, metrics_);
}

isolation::WorkerCgroups* Host::worker_cgroups() {
  if (!worker_cgroups_) {
    // Decided when the first child with a memory_max starts (a host made only to check a
    // config starts none, and changes nothing), said once.
    worker_cgroups_ = std::make_unique<isolation::WorkerCgroups>(
        isolation::CgroupLocation::of_this_process(), [](const isolation::WorkerCgroups& decided) {
          observability::log(
              observability::LogLevel::info, {},
              !decided.dir().empty()
                  ? "memory_max of worker processes: cgroup v2, a leaf per process under " +
                        decided.dir().string() + " (memory.max)"
                  : "memory_max of worker processes: RLIMIT_DATA (no cgroup v2 to use: " +
                        decided.why_not() + ")");
        });
  }
  return worker_cgroups_.get();
}

void Host::load_workers() {
  std::map<std::string, std::shared_ptr<plugin::PluginLibrary>> libraries;
  for (const auto& spec : config_->workers) {
    if (spec.isolation == config::WorkerConfig::Isolation::process) {
      auto worker = make_worker(config_, spec, nullptr);
      observability::log(
          observability::LogLevel::info, observability::LogFields::for_worker(spec.name),
          "runs plugin " + spec.plugin + " from " + worker->process_plugin.file.string() + " in " +
              std::to_string(spec.processes) + " worker process(es)");
      workers_.push_back(std::move(worker));
      continue;
    }
    auto& library = libraries[spec.plugin];
    if (!library) {
      try {
        library = plugin::PluginLibrary::load(config_->host.plugin_dir, spec.plugin);
      } catch (const plugin::PluginLoadError& e) {
        throw refusal_for(spec, e);
      }
    }
    auto worker = make_worker(config_, spec, library);
    metrics_.set_plugin_info(library->info().name, library->info().version, spec.name);
    observability::log(observability::LogLevel::info,
                       observability::LogFields::for_worker(spec.name),
                       "loaded plugin " + library->info().name + " " + library->info().version +
                           " from " + library->info().file.string());
    workers_.push_back(std::move(worker));
  }
}

std::vector<Host::WorkerPlugin> Host::loaded_plugins() const {
  std::vector<WorkerPlugin> result;
  for (const auto& worker : workers_) {
    result.push_back({worker->config->name, worker->plugin_info()});
  }
  return result;
}

void Host::set_duplicate_filter(const std::string& worker, DuplicateFilter* filter) {
  for (auto& entry : workers_) {
    if (entry->config->name == worker)
      entry->duplicate_filter = filter;
  }
}

bool Host::ready() const noexcept {
  if (!running_.load())
    return false;
  std::lock_guard lock(generations_mutex_);
  if (!crash_loops_.empty())
    return false;
  for (const auto& generation : generations_) {
    if (!generation->transport->ready())
      return false;
  }
  return !generations_.empty();
}

std::vector<std::string> Host::not_ready_reasons() const {
  if (!running_.load())
    return {"not running: starting or stopping"};
  std::lock_guard lock(generations_mutex_);
  if (generations_.empty())
    return {"not running: starting or stopping"};
  std::vector<std::string> reasons;
  for (const auto& [runner, why] : crash_loops_)
    reasons.push_back(why);
  for (const auto& generation : generations_) {
    for (auto& reason : generation->transport->not_ready_reasons())
      reasons.push_back(std::move(reason));
  }
  return reasons;
}

transport::Subscription Host::start_dispatcher(Worker& worker, std::size_t& next_crash_slot) {
  const auto& spec = *worker.config;
  DispatcherOptions options;
  options.worker = spec.name;
  options.queue = spec.queue;
  options.prefetch = static_cast<std::uint16_t>(spec.prefetch);
  options.concurrency = worker.runner ? spec.processes : spec.concurrency;
  options.retry = spec.retry;
  options.max_crashes = spec.max_crashes;
  if (worker.runner) {
    // A crash loop: the worker stops consuming (its dispatcher gives back what it holds) and
    // /readyz says why, until a reload replaces it or the host restarts.
    ProcessRunner* runner = worker.runner.get();
    transport::Transport* transport = worker.generation->transport;
    const std::string name = spec.name;
    runner->set_on_crash_loop([this, runner, transport, name](const std::string& why) {
      {
        std::lock_guard lock(generations_mutex_);
        crash_loops_[runner] = why;
      }
      transport->stop_consuming(name);
    });
    worker.dispatcher = std::make_unique<Dispatcher>(
        options, *worker.runner, *worker.context, worker.generation->transport,
        metrics_.worker(spec.name, spec.queue), health_);
  } else {
    worker.dispatcher = std::make_unique<Dispatcher>(
        options, *worker.handler, *worker.context, worker.generation->transport,
        metrics_.worker(spec.name, spec.queue), health_);
  }
  worker.dispatcher->set_duplicate_filter(worker.duplicate_filter);
  CrashHooks crash_hooks;
  crash_hooks.first_slot = next_crash_slot;
  next_crash_slot += static_cast<std::size_t>(std::max(1, options.concurrency));
  crash_hooks.dead_lettered = &metrics_.dead_lettered(spec.name, "crash");
  metrics_.crash_suspects(spec.name);  // exposed at 0 from the start
  // The journal's slots are counted for the first config: workers a reload starts get those
  // left, if any (none usually), and run without crash accounting otherwise.
  if (crash_watch_ != nullptr && next_crash_slot <= crash_watch_->slots())
    crash_hooks.watch = crash_watch_;
  worker.dispatcher->set_crash_hooks(crash_hooks);
  worker.dispatcher->start();
  transport::Subscription subscription;
  subscription.worker = spec.name;
  subscription.queue = spec.queue;
  subscription.prefetch = options.prefetch;
  subscription.settlers = static_cast<std::size_t>(std::max(1, options.concurrency));
  subscription.sink = worker.dispatcher.get();
  subscription.dead_letter_exchange = spec.dead_letter_exchange;
  return subscription;
}

bool Host::drain_worker(Worker& worker, std::chrono::steady_clock::time_point deadline) {
  worker.dispatcher->request_stop();
  if (worker.dispatcher->drain(deadline))
    return true;
  observability::log(observability::LogLevel::warn,
                     observability::LogFields::for_worker(worker.config->name),
                     std::to_string(worker.dispatcher->in_flight()) +
                         " message(s) still in a handler at the shutdown timeout; the "
                         "broker will redeliver them");
  return false;
}

bool Host::run(transport::Transport& transport, ShutdownSignal& shutdown,
               const std::function<void()>& on_started) {
  auto first = std::make_shared<Generation>();
  first->config = config_;
  first->transport = &transport;
  std::vector<transport::Subscription> subscriptions;
  for (auto& worker : workers_) {
    worker->generation = first;
    ++first->workers;
    subscriptions.push_back(start_dispatcher(*worker, next_crash_slot_));
  }

  try {
    transport.start(subscriptions);
  } catch (...) {
    for (auto& worker : workers_) {
      worker->dispatcher->drain(std::chrono::steady_clock::now());
    }
    throw;
  }
  {
    std::lock_guard lock(generations_mutex_);
    generations_.push_back(first);
  }
  running_ = true;
  metrics_.config_last_reload_success().SetToCurrentTime();
  if (on_started)
    on_started();
  observability::log_info("host '" + config_->host.name + "' running " +
                          std::to_string(workers_.size()) + " worker(s)");

  while (shutdown.wait_for_stop_or_reload() == ShutdownSignal::Event::reload)
    reload();

  running_ = false;
  const auto deadline = std::chrono::steady_clock::now() + config_->host.shutdown_timeout;
  observability::log_info("stopping: no new messages; waiting up to " +
                          std::to_string(config_->host.shutdown_timeout.count()) +
                          " ms for in-flight handlers");
  std::vector<std::shared_ptr<Generation>> generations;
  {
    std::lock_guard lock(generations_mutex_);
    generations.swap(generations_);
  }
  for (auto& generation : generations)
    generation->transport->stop_consuming();
  for (auto& worker : workers_)
    worker->dispatcher->request_stop();
  bool all_settled = abandoned_.empty();
  for (auto& worker : workers_) {
    if (!drain_worker(*worker, deadline))
      all_settled = false;
  }
  for (auto& generation : generations)
    generation->transport->close();
  observability::log_info(all_settled ? "stopped: every in-flight message was settled"
                                      : "stopped with handlers still running");
  return all_settled;
}

}  // namespace warren::runtime
