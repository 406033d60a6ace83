// The host's Prometheus registry and every metric Warren exposes (names are an interface:
// dashboards and alert rules depend on them). Recording through the handles is lock-free;
// looking a handle up takes a lock, so callers keep handles (WorkerMetrics) rather than look up
// per message.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "warren/host_abi/labelled_metric.h"
#include "warren/host_abi/plugin_metric.h"
#include "warren/metrics.h"

namespace warren::observability {

// Handles for one worker, resolved once at start.
struct WorkerMetrics {
  prometheus::Counter* received = nullptr;
  prometheus::Counter* settled_ack = nullptr;
  prometheus::Counter* settled_retry = nullptr;
  prometheus::Counter* settled_dead_letter = nullptr;
  prometheus::Counter* settled_requeue = nullptr;
  prometheus::Histogram* handler_duration = nullptr;
  prometheus::Counter* exceptions_std = nullptr;
  prometheus::Counter* exceptions_permanent = nullptr;
  prometheus::Counter* exceptions_unknown = nullptr;
  prometheus::Gauge* in_flight = nullptr;
  prometheus::Counter* duplicates = nullptr;
};

class Metrics {
 public:
  // labelled_exchanges: the exchanges warren_published_total names in its `exchange` label (the
  // configuration's: cli/published_exchanges.h); a publish to any other exchange counts as
  // exchange="other". The exchange of a publish comes from application data (outbox rows, plugin
  // publishes), so labelling by it would make series without bound.
  explicit Metrics(std::set<std::string, std::less<>> labelled_exchanges = {});
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  // The Prometheus text exposition format.
  std::string serialize() const;

  WorkerMetrics worker(const std::string& worker, const std::string& queue);

  prometheus::Gauge& broker_connected() { return *broker_connected_; }
  // The consuming connections (one per transport: the workers a reload starts get their own)
  // set warren_broker_connected: 1 while every open one is connected.
  void consumer_connection_opened();
  void consumer_connection_up(bool up);
  void consumer_connection_closed(bool was_up);
  prometheus::Counter& broker_reconnects() { return *broker_reconnects_; }
  prometheus::Gauge& broker_blocked() { return *broker_blocked_; }
  prometheus::Counter& stale_acks_dropped() { return *stale_acks_dropped_; }
  // Reloads (runtime/host_reload.cc): warren_config_reloads_total{result="success"|"error"}, and
  // warren_config_last_reload_success_timestamp_seconds (the start counts as one).
  prometheus::Counter& config_reloads(bool success) {
    return success ? *config_reloads_success_ : *config_reloads_error_;
  }
  prometheus::Gauge& config_last_reload_success() { return *config_last_reload_success_; }
  // result: confirmed|nacked|returned|timeout. `exchange` is labelled by name only when it is one
  // of the labelled exchanges given at construction, else as "other".
  prometheus::Counter& published(const std::string& exchange, const std::string& result);
  // warren_published_dropped_total{exchange}: publishes without mandatory that no queue was bound
  // for, dropped by a table-queue transport (RabbitMQ drops them in the broker, uncounted).
  prometheus::Counter& published_dropped(const std::string& exchange);
  // The label value published() uses for `exchange`.
  const std::string& exchange_label(const std::string& exchange) const;
  static constexpr std::string_view kOtherExchange = "other";

  void set_plugin_info(const std::string& plugin, const std::string& version,
                       const std::string& worker);

  // Crash accounting (runtime/crash_watch.h). warren_host_crash_suspects_total{worker}: messages
  // found inside one of the worker's handlers when the host died, counted as the next run starts.
  prometheus::Counter& crash_suspects(const std::string& worker);
  // warren_messages_dead_lettered_total{worker,reason}: dead letters by why. So far one reason:
  // "crash" (the host died max_crashes times while handling the message). Every dead letter,
  // these included, also counts in warren_messages_settled_total{outcome="dead_letter"}.
  prometheus::Counter& dead_lettered(const std::string& worker, const std::string& reason);
  // Process isolation (runtime/process_runner.h): deaths of a worker's child processes by reason
  // (isolation/child_exit.h: SIGSEGV, SIGABRT, oom, killed, exit N, timeout, wedged, init),
  // children started again, children running, and 1 while the worker is in a crash loop.
  prometheus::Counter& plugin_crashes(const std::string& worker, const std::string& reason);
  prometheus::Counter& plugin_restarts(const std::string& worker);
  prometheus::Gauge& plugin_processes(const std::string& worker);
  prometheus::Gauge& plugin_crashloop(const std::string& worker);

  prometheus::Gauge& outbox_pending(const std::string& outbox);
  prometheus::Gauge& outbox_dead(const std::string& outbox);
  prometheus::Counter& outbox_relayed(const std::string& outbox);
  prometheus::Gauge& outbox_lag_seconds(const std::string& outbox);

  // The table-queue transports (SQLite, PostgreSQL): rows by queue and status, and how long the
  // oldest ready row of a queue has waited for a worker.
  prometheus::Gauge& queue_depth(const std::string& queue, const std::string& status);
  prometheus::Gauge& queue_oldest_pending_seconds(const std::string& queue);
  // PostgreSQL: the age of the oldest transaction holding back xmin on the queue's database (dead
  // rows it keeps alive slow every claim down).
  prometheus::Gauge& queue_xmin_age_seconds();
  // Settlements dropped because the row's lease was no longer this host's (it was rescued, and
  // perhaps claimed by another host): the fencing at work.
  prometheus::Counter& queue_settlements_dropped(const std::string& queue);

  // A plugin metric named warren_plugin_<name> (prefix added when missing) labelled with the
  // worker and plugin: the plugin's handle itself (abi.h's metric_record records through it).
  // nullptr with `error` set when the name or buckets break host_abi/metric_rules.h or the name
  // is taken by another type. Handles live as long as this Metrics.
  host_abi::PluginMetric* plugin_metric(const std::string& worker, const std::string& plugin,
                                        MetricType type, std::string_view name,
                                        std::string_view help, std::span<const double> buckets,
                                        std::string& error);

  // The label names of a labelled plugin metric, and the bound on its series (for this worker).
  struct PluginLabels {
    std::vector<std::string> names;
    std::size_t series_limit = host_abi::kDefaultMetricSeriesLimit;
    // Told once when the bound is reached (the worker logs it).
    std::function<void(const std::string&)> warn;
  };
  // The same with label names (host_abi/labelled_metric.h): the handle's series are labelled
  // worker, plugin and the plugin's labels. A name registered with other label names (or none)
  // is refused.
  host_abi::PluginMetric* plugin_labelled_metric(const std::string& worker,
                                                 const std::string& plugin, MetricType type,
                                                 std::string_view name, std::string_view help,
                                                 std::span<const double> buckets,
                                                 const PluginLabels& labels, std::string& error);

  // Histogram buckets for handler durations: 100 us to 60 s.
  static const prometheus::Histogram::BucketBoundaries& duration_buckets();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  const std::set<std::string, std::less<>> labelled_exchanges_;  // never changes: no lock
  const std::string other_exchange_{kOtherExchange};
  prometheus::Family<prometheus::Counter>* received_;
  prometheus::Family<prometheus::Counter>* settled_;
  prometheus::Family<prometheus::Histogram>* handler_duration_;
  prometheus::Family<prometheus::Counter>* exceptions_;
  prometheus::Family<prometheus::Gauge>* in_flight_;
  prometheus::Family<prometheus::Counter>* duplicates_;
  prometheus::Family<prometheus::Counter>* published_;
  prometheus::Family<prometheus::Counter>* published_dropped_;
  prometheus::Family<prometheus::Gauge>* plugin_info_;
  prometheus::Family<prometheus::Counter>* crash_suspects_;
  prometheus::Family<prometheus::Counter>* plugin_crashes_;
  prometheus::Family<prometheus::Counter>* plugin_restarts_;
  prometheus::Family<prometheus::Gauge>* plugin_processes_;
  prometheus::Family<prometheus::Gauge>* plugin_crashloop_;
  prometheus::Family<prometheus::Counter>* dead_lettered_;
  prometheus::Family<prometheus::Gauge>* outbox_pending_;
  prometheus::Family<prometheus::Gauge>* outbox_dead_;
  prometheus::Family<prometheus::Counter>* outbox_relayed_;
  prometheus::Family<prometheus::Gauge>* outbox_lag_;
  prometheus::Family<prometheus::Gauge>* queue_depth_;
  prometheus::Family<prometheus::Gauge>* queue_oldest_pending_;
  prometheus::Family<prometheus::Gauge>* queue_xmin_age_;
  prometheus::Family<prometheus::Counter>* queue_settlements_dropped_;
  prometheus::Gauge* broker_connected_;
  prometheus::Counter* broker_reconnects_;
  prometheus::Gauge* broker_blocked_;
  prometheus::Counter* stale_acks_dropped_;
  std::mutex consumer_connections_mutex_;
  int consumer_connections_open_ = 0;
  int consumer_connections_up_ = 0;
  void set_broker_connected_locked();
  prometheus::Counter* config_reloads_success_;
  prometheus::Counter* config_reloads_error_;
  prometheus::Gauge* config_last_reload_success_;

  struct PluginMetricRequest {
    const std::string& worker;
    const std::string& plugin;
    MetricType type;
    std::string_view name;
    std::string_view help;
    std::span<const double> buckets;
    const PluginLabels* labels;  // nullptr: unlabelled
  };
  host_abi::PluginMetric* plugin_metric(const PluginMetricRequest& request, std::string& error);
  // A handle of type T, in `family` (made and stored there when null).
  template <class T>
  std::unique_ptr<host_abi::PluginMetric> make_plugin_metric(const PluginMetricRequest& request,
                                                             const std::string& full_name,
                                                             const std::string& help_text,
                                                             const prometheus::Labels& labels,
                                                             void*& family);

  std::mutex plugin_mutex_;
  struct PluginFamily {
    MetricType type;
    void* family;  // prometheus::Family<T>* for the type
    bool labelled;
    std::vector<std::string> label_names;
  };
  std::map<std::string, PluginFamily> plugin_families_;
  std::map<std::string, std::unique_ptr<host_abi::PluginMetric>> plugin_metrics_;
};

}  // namespace warren::observability
