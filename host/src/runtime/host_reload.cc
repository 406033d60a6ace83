// Host::reload (host.h): SIGHUP's work. In two halves, so that nothing changes unless all of it
// can be applied:
//   prepare  the config read and validated again (ReloadSource::load), each worker compared with
//            the running one (worker_diff.h), and for every added or changed worker its plugin
//            loaded (a replaced file from a fresh snapshot of its content, a kept one shared) and
//            its handler constructed. Any failure: the prepared instances are destroyed, the
//            error logged and counted, the host runs on as it was.
//   apply    the new instances start on a transport of their own (so the workers left alone are
//            not even re-subscribed), then the removed and replaced ones stop consuming and drain
//            within shutdown_timeout; a drained worker is unloaded, and its plugin library with
//            its last instance. At no time is a changed worker's queue without a consumer.
#include <map>

#include "config/problem_list.h"
#include "observability/log.h"
#include "plugin/plugin_content.h"
#include "runtime/host.h"
#include "runtime/host_worker.h"
#include "runtime/worker_diff.h"

namespace warren::runtime {

struct Host::ReloadPlan {
  std::shared_ptr<const config::Config> config;
  std::vector<WorkerChange> changes;
  // The added workers and the new instances of the changed ones, constructed, not started.
  std::map<std::string, std::unique_ptr<Worker>> starting;
};

namespace {

using Kind = WorkerChange::Kind;

const WorkerChange* change_of(const std::vector<WorkerChange>& changes, const std::string& name) {
  for (const auto& change : changes) {
    if (change.worker == name)
      return &change;
  }
  return nullptr;
}

// "exchange 'x'" and "queue 'q'" for each one `a` has and `b` has not.
std::vector<std::string> topology_missing_from(const config::Config& a, const config::Config& b) {
  std::vector<std::string> missing;
  for (const auto& exchange : a.exchanges) {
    if (b.find_exchange(exchange.name) == nullptr)
      missing.push_back("exchange '" + exchange.name + "'");
  }
  for (const auto& queue : a.queues) {
    if (b.find_queue(queue.name) == nullptr)
      missing.push_back("queue '" + queue.name + "'");
  }
  return missing;
}

}  // namespace

// A reload never deletes from the broker: a removal is reported. Additions are declared by the
// transport of the workers the reload started, else by one made only to declare them (RabbitMQ:
// a table queue's routing is read by the next host that starts).
void Host::apply_topology(const config::Config& running, const config::Config& next,
                          bool declared) {
  for (const auto& gone : topology_missing_from(running, next)) {
    observability::log_warn("reload: " + gone +
                            " is no longer in the configuration; it stays on the broker (a "
                            "reload never deletes anything): delete it yourself once unused");
  }
  const std::vector<std::string> added = topology_missing_from(next, running);
  if (added.empty() || declared ||
      next.broker.transport != config::BrokerConfig::Transport::rabbitmq)
    return;
  try {
    auto declarer = reload_source_.make_transport(next);
    declarer->start({});
    declarer->close();
  } catch (const transport::TransportError& e) {
    throw ReloadRefused({std::string("cannot declare what the configuration adds: ") + e.what()});
  }
  std::string names;
  for (const auto& name : added)
    names += (names.empty() ? "" : ", ") + name;
  observability::log_info("reload: declared " + names);
}

Host::ReloadPlan Host::prepare_reload() {
  if (!reload_source_.load)
    throw ReloadRefused({"this host cannot reload (no reload source); restart it instead"});
  ReloadPlan plan;
  plan.config = std::make_shared<const config::Config>(reload_source_.load(*config_));
  const config::Config& next = *plan.config;

  // The plugin files as they are now: their content decides whether a worker changed.
  std::map<std::string, std::string> hashes;
  try {
    for (const auto& spec : next.workers) {
      if (!hashes.count(spec.plugin))
        hashes[spec.plugin] =
            plugin::plugin_file_hash(next.host.plugin_dir / plugin::plugin_file_name(spec.plugin));
    }
  } catch (const plugin::PluginLoadError& e) {
    throw ReloadRefused({e.what()});
  }
  std::vector<RunningWorker> running;
  for (const auto& worker : workers_)
    running.push_back({worker->config, worker->plugin_info().content_hash});
  plan.changes = diff_workers(running, next.workers, hashes);

  // A library already loaded from the same file with the same content is shared; any other is
  // loaded from a snapshot of the file now (never the dynamic loader's cached old one).
  std::map<std::string, std::shared_ptr<const plugin::PluginLibrary>> libraries;
  for (const auto& worker : workers_) {
    if (!worker->handler)
      continue;  // isolation = "process": nothing loaded in the host
    const auto& info = worker->handler->info();
    if (info.file == next.host.plugin_dir / plugin::plugin_file_name(worker->config->plugin) &&
        hashes[worker->config->plugin] == info.content_hash)
      libraries[worker->config->plugin] = worker->handler->library();
  }
  try {
    for (const auto& spec : next.workers) {
      const WorkerChange* change = change_of(plan.changes, spec.name);
      if (change->kind == Kind::unchanged)
        continue;
      DuplicateFilter* filter = nullptr;
      for (const auto& worker : workers_) {
        if (worker->config->name == spec.name &&
            worker->config->idempotency.has_value() == spec.idempotency.has_value())
          filter = worker->duplicate_filter;
      }
      if (spec.idempotency && filter == nullptr) {
        throw ReloadRefused({config::to_string(spec.where) + ": worker '" + spec.name +
                             "': idempotency is set up at start; restart warren to add a worker "
                             "with [workers.idempotency] or to turn it on"});
      }
      std::shared_ptr<const plugin::PluginLibrary> library;
      if (spec.isolation == config::WorkerConfig::Isolation::thread) {
        auto& loaded = libraries[spec.plugin];
        if (!loaded) {
          try {
            loaded = plugin::PluginLibrary::load_snapshot(next.host.plugin_dir, spec.plugin);
          } catch (const plugin::PluginLoadError& e) {
            throw refusal_for(spec, e);
          }
        }
        library = loaded;
      }
      auto worker = make_worker(plan.config, spec, library);
      worker->duplicate_filter = filter;
      plan.starting[spec.name] = std::move(worker);
    }
  } catch (const plugin::PluginLoadError& e) {
    throw ReloadRefused({e.what()});  // plan.starting's instances go with the plan
  }
  return plan;
}

void Host::apply_reload(ReloadPlan& plan) {
  const config::Config& next = *plan.config;
  // Before any worker changes: a refusal here still changes nothing.
  apply_topology(*config_, next, !plan.starting.empty());
  for (const auto& change : plan.changes) {
    observability::log(change.kind == Kind::unchanged ? observability::LogLevel::debug
                                                      : observability::LogLevel::info,
                       observability::LogFields::for_worker(change.worker),
                       "reload: worker '" + change.worker + "' " + describe(change));
  }

  // The new instances first, on a transport of their own.
  if (!plan.starting.empty()) {
    auto generation = std::make_shared<Generation>();
    generation->config = plan.config;
    generation->owned = reload_source_.make_transport(next);
    generation->transport = generation->owned.get();
    std::vector<transport::Subscription> subscriptions;
    for (auto& [name, worker] : plan.starting) {
      worker->generation = generation;
      ++generation->workers;
      subscriptions.push_back(start_dispatcher(*worker, next_crash_slot_));
    }
    try {
      generation->transport->start(subscriptions);
    } catch (const transport::TransportError& e) {
      for (auto& [name, worker] : plan.starting)
        worker->dispatcher->drain(std::chrono::steady_clock::now());
      generation->transport->close();
      throw ReloadRefused({std::string("cannot start the new workers: ") + e.what()});
    }
    std::lock_guard lock(generations_mutex_);
    generations_.push_back(generation);
  }

  // Then the old ones stop consuming and drain, each settling what it holds.
  std::vector<std::unique_ptr<Worker>> leaving;
  std::vector<std::unique_ptr<Worker>> staying;
  for (auto& worker : workers_) {
    const WorkerChange* change = change_of(plan.changes, worker->config->name);
    (change->kind == Kind::unchanged ? staying : leaving).push_back(std::move(worker));
  }
  for (auto& worker : leaving)
    worker->generation->transport->stop_consuming(worker->config->name);
  const auto deadline = std::chrono::steady_clock::now() + next.host.shutdown_timeout;
  for (auto& worker : leaving)
    worker->dispatcher->request_stop();
  std::vector<std::unique_ptr<Worker>> drained;
  for (auto& worker : leaving)
    (drain_worker(*worker, deadline) ? drained : abandoned_).push_back(std::move(worker));

  // The reloaded config's order.
  workers_.clear();
  for (const auto& spec : next.workers) {
    if (auto started = plan.starting.find(spec.name); started != plan.starting.end()) {
      if (started->second->handler) {
        const auto& info = started->second->handler->info();
        metrics_.set_plugin_info(info.name, info.version, spec.name);
      }
      workers_.push_back(std::move(started->second));
      continue;
    }
    for (auto& worker : staying) {
      if (worker && worker->config->name == spec.name)
        workers_.push_back(std::move(worker));
    }
  }
  retire(std::move(drained));
}

void Host::retire(std::vector<std::unique_ptr<Worker>> drained) {
  std::vector<std::shared_ptr<Generation>> unused;
  for (auto& worker : drained) {
    if (worker->runner) {
      std::lock_guard lock(generations_mutex_);
      crash_loops_.erase(worker->runner.get());  // replaced: its crash loop no longer counts
    }
    if (--worker->generation->workers == 0)
      unused.push_back(worker->generation);
  }
  for (auto& generation : unused) {
    {
      std::lock_guard lock(generations_mutex_);
      std::erase(generations_, generation);
    }
    generation->transport->close();
  }
  // The dispatcher, the plugin's instance, and with the last instance the library.
  drained.clear();
}

void Host::count_reload(bool ok) {
  metrics_.config_reloads(ok).Increment();
  if (ok)
    metrics_.config_last_reload_success().SetToCurrentTime();
}

bool Host::reload() {
  const auto began = std::chrono::steady_clock::now();
  const std::shared_ptr<const config::Config> running = config_;
  try {
    ReloadPlan plan = prepare_reload();
    apply_reload(plan);
    config_ = plan.config;
  } catch (const ReloadRefused& refused) {
    for (const auto& problem : refused.problems())
      observability::log_error("reload: " + problem);
    observability::log_error("reload refused: nothing changed; the host runs on as before");
    count_reload(false);
    return false;
  } catch (const std::exception& e) {
    observability::log_error(std::string("reload refused: nothing changed: ") + e.what());
    count_reload(false);
    return false;
  }
  if (reload_source_.applied)
    reload_source_.applied(*running, *config_);
  count_reload(true);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - began);
  observability::log_info("reload: applied " + config_->file.string() + " in " +
                          std::to_string(took.count()) + " ms");
  return true;
}

}  // namespace warren::runtime
