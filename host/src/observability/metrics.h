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

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <variant>

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

// A metric a plugin created through its PluginContext.
class PluginMetric {
 public:
  explicit PluginMetric(prometheus::Counter& counter) : metric_(&counter) {}
  explicit PluginMetric(prometheus::Gauge& gauge) : metric_(&gauge) {}
  explicit PluginMetric(prometheus::Histogram& histogram) : metric_(&histogram) {}
  void record(double value) noexcept;

 private:
  std::variant<prometheus::Counter*, prometheus::Gauge*, prometheus::Histogram*> metric_;
};

enum class PluginMetricType { counter, gauge, histogram };

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  // The Prometheus text exposition format.
  std::string serialize() const;

  WorkerMetrics worker(const std::string& worker, const std::string& queue);

  prometheus::Gauge& broker_connected() { return *broker_connected_; }
  prometheus::Counter& broker_reconnects() { return *broker_reconnects_; }
  prometheus::Gauge& broker_blocked() { return *broker_blocked_; }
  prometheus::Counter& stale_acks_dropped() { return *stale_acks_dropped_; }
  // result: confirmed|nacked|returned|timeout
  prometheus::Counter& published(const std::string& exchange, const std::string& result);

  void set_plugin_info(const std::string& plugin, const std::string& version,
                       const std::string& worker);

  prometheus::Gauge& outbox_pending(const std::string& outbox);
  prometheus::Gauge& outbox_dead(const std::string& outbox);
  prometheus::Counter& outbox_relayed(const std::string& outbox);
  prometheus::Gauge& outbox_lag_seconds(const std::string& outbox);

  // A plugin metric named warren_plugin_<name> (prefix added when missing) labelled with the
  // worker and plugin. nullptr with `error` set when the name is invalid or taken by another
  // type. Handles live as long as this Metrics.
  PluginMetric* plugin_metric(const std::string& worker, const std::string& plugin,
                              PluginMetricType type, std::string_view name, std::string_view help,
                              std::span<const double> buckets, std::string& error);

  // Histogram buckets for handler durations: 100 us to 60 s.
  static const prometheus::Histogram::BucketBoundaries& duration_buckets();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* received_;
  prometheus::Family<prometheus::Counter>* settled_;
  prometheus::Family<prometheus::Histogram>* handler_duration_;
  prometheus::Family<prometheus::Counter>* exceptions_;
  prometheus::Family<prometheus::Gauge>* in_flight_;
  prometheus::Family<prometheus::Counter>* duplicates_;
  prometheus::Family<prometheus::Counter>* published_;
  prometheus::Family<prometheus::Gauge>* plugin_info_;
  prometheus::Family<prometheus::Gauge>* outbox_pending_;
  prometheus::Family<prometheus::Gauge>* outbox_dead_;
  prometheus::Family<prometheus::Counter>* outbox_relayed_;
  prometheus::Family<prometheus::Gauge>* outbox_lag_;
  prometheus::Gauge* broker_connected_;
  prometheus::Counter* broker_reconnects_;
  prometheus::Gauge* broker_blocked_;
  prometheus::Counter* stale_acks_dropped_;

  std::mutex plugin_mutex_;
  struct PluginFamily {
    PluginMetricType type;
    void* family;  // prometheus::Family<T>* for the type
  };
  std::map<std::string, PluginFamily> plugin_families_;
  std::map<std::string, std::unique_ptr<PluginMetric>> plugin_metrics_;
};

}  // namespace warren::observability
