// See host.h. Shutdown order: readiness off, cancel consumers, let dispatchers finish and settle
// what is in flight, then close the transport (which makes sure settlements reached the broker).
#include "runtime/host.h"

#include <map>

#include "observability/log.h"

namespace warren::runtime {

struct Host::Worker {
  const config::WorkerConfig* config = nullptr;
  DuplicateFilter* duplicate_filter = nullptr;
  std::unique_ptr<WorkerContext> context;
  std::unique_ptr<plugin::HandlerInstance> handler;
  std::unique_ptr<Dispatcher> dispatcher;
};

Host::Host(const config::Config& config, observability::Metrics& metrics,
           observability::Health* health)
    : config_(config), metrics_(metrics), health_(health) {}

Host::~Host() = default;

void Host::load_workers() {
  std::map<std::string, std::shared_ptr<plugin::PluginLibrary>> libraries;
  for (const auto& spec : config_.workers) {
    auto& library = libraries[spec.plugin];
    if (!library)
      library = plugin::PluginLibrary::load(config_.host.plugin_dir, spec.plugin);
    auto worker = std::make_unique<Worker>();
    worker->config = &spec;
    worker->context =
        std::make_unique<WorkerContext>(spec.name, spec.plugin, spec.settings, metrics_,
                                        static_cast<std::size_t>(spec.metric_series_limit));
    try {
      worker->handler = std::make_unique<plugin::HandlerInstance>(library, *worker->context);
    } catch (const plugin::PluginLoadError& e) {
      throw plugin::PluginLoadError(e.file(), "worker '" + spec.name + "': " + e.reason());
    }
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
  transport::Transport* transport = transport_.load();
  return running_.load() && transport != nullptr && transport->ready();
}

std::vector<std::string> Host::not_ready_reasons() const {
  transport::Transport* transport = transport_.load();
  if (!running_.load() || transport == nullptr)
    return {"not running: starting or stopping"};
  return transport->not_ready_reasons();
}

bool Host::run(transport::Transport& transport, ShutdownSignal& shutdown,
               const std::function<void()>& on_started) {
  transport_ = &transport;
  std::vector<transport::Subscription> subscriptions;
  std::size_t next_slot = 0;  // crash journal slots, handed out in the config's order
  for (auto& worker : workers_) {
    const auto& spec = *worker->config;
    DispatcherOptions options;
    options.worker = spec.name;
    options.queue = spec.queue;
    options.prefetch = static_cast<std::uint16_t>(spec.prefetch);
    options.concurrency = spec.concurrency;
    options.retry = spec.retry;
    options.max_crashes = spec.max_crashes;
    worker->dispatcher =
        std::make_unique<Dispatcher>(options, *worker->handler, *worker->context, &transport,
                                     metrics_.worker(spec.name, spec.queue), health_);
    worker->dispatcher->set_duplicate_filter(worker->duplicate_filter);
    CrashHooks crash_hooks;
    crash_hooks.first_slot = next_slot;
    next_slot += static_cast<std::size_t>(std::max(1, spec.concurrency));
    crash_hooks.dead_lettered = &metrics_.dead_lettered(spec.name, "crash");
    metrics_.crash_suspects(spec.name);  // exposed at 0 from the start
    if (crash_watch_ != nullptr && next_slot <= crash_watch_->slots())
      crash_hooks.watch = crash_watch_;
    worker->dispatcher->set_crash_hooks(crash_hooks);
    worker->dispatcher->start();
    transport::Subscription subscription;
    subscription.worker = spec.name;
    subscription.queue = spec.queue;
    subscription.prefetch = options.prefetch;
    subscription.sink = worker->dispatcher.get();
    subscription.dead_letter_exchange = spec.dead_letter_exchange;
    subscriptions.push_back(subscription);
  }

  try {
    transport.start(subscriptions);
  } catch (...) {
    transport_ = nullptr;
    for (auto& worker : workers_) {
      worker->dispatcher->drain(std::chrono::steady_clock::now());
    }
    throw;
  }
  running_ = true;
  if (on_started)
    on_started();
  observability::log_info("host '" + config_.host.name + "' running " +
                          std::to_string(workers_.size()) + " worker(s)");

  shutdown.wait();

  running_ = false;
  const auto deadline = std::chrono::steady_clock::now() + config_.host.shutdown_timeout;
  observability::log_info("stopping: no new messages; waiting up to " +
                          std::to_string(config_.host.shutdown_timeout.count()) +
                          " ms for in-flight handlers");
  transport.stop_consuming();
  for (auto& worker : workers_)
    worker->dispatcher->request_stop();
  bool all_settled = true;
  for (auto& worker : workers_) {
    if (!worker->dispatcher->drain(deadline)) {
      all_settled = false;
      observability::log(observability::LogLevel::warn,
                         observability::LogFields::for_worker(worker->config->name),
                         std::to_string(worker->dispatcher->in_flight()) +
                             " message(s) still in a handler at the shutdown timeout; the "
                             "broker will redeliver them");
    }
  }
  transport_ = nullptr;
  transport.close();
  observability::log_info(all_settled ? "stopped: every in-flight message was settled"
                                      : "stopped with handlers still running");
  return all_settled;
}

}  // namespace warren::runtime
