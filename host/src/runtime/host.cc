// See host.h. Shutdown order: readiness off, cancel consumers, let dispatchers finish and settle
// what is in flight, then close the transports (which makes sure settlements reached the broker).
// Reloading: host_reload.cc.
#include "runtime/host.h"

#include <map>

#include "observability/log.h"
#include "runtime/host_worker.h"

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
    worker->handler = std::make_unique<plugin::HandlerInstance>(library, *worker->context);
  } catch (const plugin::PluginLoadError& e) {
    throw plugin::PluginLoadError(e.file(), "worker '" + spec.name + "': " + e.reason());
  }
  return worker;
}

void Host::load_workers() {
  std::map<std::string, std::shared_ptr<plugin::PluginLibrary>> libraries;
  for (const auto& spec : config_->workers) {
    auto& library = libraries[spec.plugin];
    if (!library)
      library = plugin::PluginLibrary::load(config_->host.plugin_dir, spec.plugin);
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
    result.push_back({worker->config->name, worker->handler->info()});
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
  options.concurrency = spec.concurrency;
  options.retry = spec.retry;
  options.max_crashes = spec.max_crashes;
  worker.dispatcher = std::make_unique<Dispatcher>(options, *worker.handler, *worker.context,
                                                   worker.generation->transport,
                                                   metrics_.worker(spec.name, spec.queue), health_);
  worker.dispatcher->set_duplicate_filter(worker.duplicate_filter);
  CrashHooks crash_hooks;
  crash_hooks.first_slot = next_crash_slot;
  next_crash_slot += static_cast<std::size_t>(std::max(1, spec.concurrency));
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
