// See metrics.h. Metric names and labels here are the contract of issue "Prometheus metrics":
// change them only with the dashboards and alert rules in packaging/.
#include "observability/metrics.h"

#include <prometheus/text_serializer.h>

#include <type_traits>
#include <utility>
#include <vector>

#include "warren/host_abi/labelled_metric.h"
#include "warren/host_abi/metric_rules.h"
#include "warren_version.h"

namespace warren::observability {
namespace {

// A plugin metric in the registry: the host's implementation of the ABI's metric handle.
template <class Metric>
class RegistryPluginMetric final : public host_abi::PluginMetric {
 public:
  RegistryPluginMetric(MetricType type, Metric& metric) : PluginMetric(type), metric_(metric) {}

 private:
  void apply(double value) noexcept override {
    if constexpr (std::is_same_v<Metric, prometheus::Counter>) {
      metric_.Increment(value);
    } else if constexpr (std::is_same_v<Metric, prometheus::Gauge>) {
      metric_.Set(value);
    } else {
      metric_.Observe(value);
    }
  }

  Metric& metric_;
};

template <class T>
auto build_family() {
  if constexpr (std::is_same_v<T, prometheus::Counter>)
    return prometheus::BuildCounter();
  else if constexpr (std::is_same_v<T, prometheus::Gauge>)
    return prometheus::BuildGauge();
  else
    return prometheus::BuildHistogram();
}

template <class T>
T& add_series(prometheus::Family<T>& family, const prometheus::Labels& labels,
              const prometheus::Histogram::BucketBoundaries& buckets) {
  if constexpr (std::is_same_v<T, prometheus::Histogram>)
    return family.Add(labels, buckets);
  else
    return family.Add(labels);
}

// A labelled plugin metric in the registry: each series is the family's series of the worker's
// labels plus the plugin's.
template <class T>
class RegistryLabelledMetric final : public host_abi::LabelledMetric {
 public:
  RegistryLabelledMetric(MetricType type, const std::string& exported_name,
                         const Metrics::PluginLabels& labels, prometheus::Family<T>& family,
                         prometheus::Labels worker_labels,
                         prometheus::Histogram::BucketBoundaries buckets)
      : LabelledMetric(type, exported_name, labels.names, labels.series_limit, labels.warn),
        family_(family),
        worker_labels_(std::move(worker_labels)),
        buckets_(std::move(buckets)) {}

 private:
  std::unique_ptr<host_abi::PluginMetric> make_series(
      const std::vector<std::string>& values) override {
    prometheus::Labels labels = worker_labels_;
    for (std::size_t i = 0; i < values.size(); ++i)
      labels.emplace(label_names()[i], values[i]);
    return std::make_unique<RegistryPluginMetric<T>>(type(), add_series(family_, labels, buckets_));
  }

  prometheus::Family<T>& family_;
  const prometheus::Labels worker_labels_;
  const prometheus::Histogram::BucketBoundaries buckets_;
};

}  // namespace

const prometheus::Histogram::BucketBoundaries& Metrics::duration_buckets() {
  static const prometheus::Histogram::BucketBoundaries buckets{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
  return buckets;
}

Metrics::Metrics(std::set<std::string, std::less<>> labelled_exchanges)
    : registry_(std::make_shared<prometheus::Registry>()),
      labelled_exchanges_(std::move(labelled_exchanges)) {
  auto& r = *registry_;
  received_ = &prometheus::BuildCounter()
                   .Name("warren_messages_received_total")
                   .Help("Messages delivered to a worker")
                   .Register(r);
  settled_ = &prometheus::BuildCounter()
                  .Name("warren_messages_settled_total")
                  .Help("Messages settled by a worker, by outcome (ack|retry|dead_letter|requeue)")
                  .Register(r);
  handler_duration_ = &prometheus::BuildHistogram()
                           .Name("warren_handler_duration_seconds")
                           .Help("Time spent in the plugin's handle(), per call")
                           .Register(r);
  exceptions_ = &prometheus::BuildCounter()
                     .Name("warren_handler_exceptions_total")
                     .Help("Exceptions thrown by handlers (type: std_exception|permanent|unknown)")
                     .Register(r);
  in_flight_ = &prometheus::BuildGauge()
                    .Name("warren_messages_in_flight")
                    .Help("Messages received by a worker and not yet settled")
                    .Register(r);
  duplicates_ = &prometheus::BuildCounter()
                     .Name("warren_messages_duplicates_total")
                     .Help("Messages acked without calling the handler: already processed")
                     .Register(r);
  published_ = &prometheus::BuildCounter()
                    .Name("warren_published_total")
                    .Help(
                        "Publishes by exchange (configured ones by name, the rest \"other\") "
                        "and result (confirmed|nacked|returned|timeout)")
                    .Register(r);
  published_dropped_ =
      &prometheus::BuildCounter()
           .Name("warren_published_dropped_total")
           .Help(
               "Publishes without mandatory that no queue was bound for, dropped (table queues; "
               "RabbitMQ drops them in the broker, uncounted)")
           .Register(r);
  plugin_info_ = &prometheus::BuildGauge()
                      .Name("warren_plugin_info")
                      .Help("The plugin each worker runs (always 1)")
                      .Register(r);
  crash_suspects_ =
      &prometheus::BuildCounter()
           .Name("warren_host_crash_suspects_total")
           .Help("Messages found inside a handler when the host died (counted at the next start)")
           .Register(r);
  plugin_crashes_ = &prometheus::BuildCounter()
                         .Name("warren_plugin_crashes_total")
                         .Help(
                             "Deaths of a worker's child processes (isolation = process), by "
                             "reason")
                         .Register(r);
  plugin_restarts_ = &prometheus::BuildCounter()
                          .Name("warren_plugin_restarts_total")
                          .Help("Child processes started again after one died")
                          .Register(r);
  plugin_processes_ = &prometheus::BuildGauge()
                           .Name("warren_plugin_processes")
                           .Help("Child processes of the worker running and ready")
                           .Register(r);
  plugin_crashloop_ = &prometheus::BuildGauge()
                           .Name("warren_plugin_crashloop")
                           .Help(
                               "1 while the worker is in a crash loop: its children die before "
                               "they are ready, and it no longer consumes")
                           .Register(r);
  dead_lettered_ = &prometheus::BuildCounter()
                        .Name("warren_messages_dead_lettered_total")
                        .Help("Messages dead-lettered by the host, by reason (crash)")
                        .Register(r);
  outbox_pending_ = &prometheus::BuildGauge()
                         .Name("warren_outbox_pending")
                         .Help("Outbox rows waiting to be relayed")
                         .Register(r);
  outbox_dead_ = &prometheus::BuildGauge()
                      .Name("warren_outbox_dead")
                      .Help("Outbox rows that exhausted their attempts")
                      .Register(r);
  outbox_relayed_ = &prometheus::BuildCounter()
                         .Name("warren_outbox_relayed_total")
                         .Help("Outbox rows published with a confirm and marked sent")
                         .Register(r);
  outbox_lag_ = &prometheus::BuildGauge()
                     .Name("warren_outbox_lag_seconds")
                     .Help("Age of the oldest pending outbox row")
                     .Register(r);
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("warren_queue_depth")
                      .Help("Rows of a table queue by status (pending, running, done, dead)")
                      .Register(r);
  queue_oldest_pending_ = &prometheus::BuildGauge()
                               .Name("warren_queue_oldest_pending_seconds")
                               .Help("How long the oldest ready row of a table queue has waited")
                               .Register(r);
  queue_xmin_age_ = &prometheus::BuildGauge()
                         .Name("warren_queue_xmin_age_seconds")
                         .Help(
                             "Age of the oldest transaction holding back xmin on the PostgreSQL "
                             "queue's database")
                         .Register(r);
  queue_settlements_dropped_ =
      &prometheus::BuildCounter()
           .Name("warren_queue_settlements_dropped_total")
           .Help("Settlements of a table queue dropped because the row's lease was lost")
           .Register(r);
  auto& reloads = prometheus::BuildCounter()
                      .Name("warren_config_reloads_total")
                      .Help("Reloads of the configuration (SIGHUP, warren reload) by result")
                      .Register(r);
  config_reloads_success_ = &reloads.Add({{"result", "success"}});
  config_reloads_error_ = &reloads.Add({{"result", "error"}});
  config_last_reload_success_ =
      &prometheus::BuildGauge()
           .Name("warren_config_last_reload_success_timestamp_seconds")
           .Help("When the configuration was last loaded successfully (at start, or a reload)")
           .Register(r)
           .Add({});
  broker_connected_ = &prometheus::BuildGauge()
                           .Name("warren_broker_connected")
                           .Help("1 while the consuming connection to the broker is up")
                           .Register(r)
                           .Add({});
  broker_reconnects_ = &prometheus::BuildCounter()
                            .Name("warren_broker_reconnects_total")
                            .Help("Reconnections to the broker after a failure")
                            .Register(r)
                            .Add({});
  broker_blocked_ = &prometheus::BuildGauge()
                         .Name("warren_broker_blocked")
                         .Help("1 while the broker blocks publishing (memory or disk alarm)")
                         .Register(r)
                         .Add({});
  stale_acks_dropped_ =
      &prometheus::BuildCounter()
           .Name("warren_stale_acks_dropped_total")
           .Help("Settlements dropped because their channel was gone (the broker redelivers)")
           .Register(r)
           .Add({});
  prometheus::BuildGauge()
      .Name("warren_build_info")
      .Help("Warren's version (always 1)")
      .Register(r)
      .Add({{"version", WARREN_VERSION}})
      .Set(1);
}

std::string Metrics::serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

WorkerMetrics Metrics::worker(const std::string& worker, const std::string& queue) {
  WorkerMetrics m;
  m.received = &received_->Add({{"worker", worker}, {"queue", queue}});
  const auto settled = [&](const char* outcome) {
    return &settled_->Add({{"worker", worker}, {"queue", queue}, {"outcome", outcome}});
  };
  m.settled_ack = settled("ack");
  m.settled_retry = settled("retry");
  m.settled_dead_letter = settled("dead_letter");
  m.settled_requeue = settled("requeue");
  m.handler_duration = &handler_duration_->Add({{"worker", worker}}, duration_buckets());
  m.exceptions_std = &exceptions_->Add({{"worker", worker}, {"type", "std_exception"}});
  m.exceptions_permanent = &exceptions_->Add({{"worker", worker}, {"type", "permanent"}});
  m.exceptions_unknown = &exceptions_->Add({{"worker", worker}, {"type", "unknown"}});
  m.in_flight = &in_flight_->Add({{"worker", worker}});
  m.duplicates = &duplicates_->Add({{"worker", worker}});
  return m;
}

const std::string& Metrics::exchange_label(const std::string& exchange) const {
  const auto known = labelled_exchanges_.find(exchange);
  return known != labelled_exchanges_.end() ? *known : other_exchange_;
}

prometheus::Counter& Metrics::published(const std::string& exchange, const std::string& result) {
  return published_->Add({{"exchange", exchange_label(exchange)}, {"result", result}});
}

prometheus::Counter& Metrics::published_dropped(const std::string& exchange) {
  return published_dropped_->Add({{"exchange", exchange_label(exchange)}});
}

void Metrics::set_plugin_info(const std::string& plugin, const std::string& version,
                              const std::string& worker) {
  plugin_info_->Add({{"plugin", plugin}, {"version", version}, {"worker", worker}}).Set(1);
}

prometheus::Counter& Metrics::crash_suspects(const std::string& worker) {
  return crash_suspects_->Add({{"worker", worker}});
}

prometheus::Counter& Metrics::dead_lettered(const std::string& worker, const std::string& reason) {
  return dead_lettered_->Add({{"worker", worker}, {"reason", reason}});
}

prometheus::Counter& Metrics::plugin_crashes(const std::string& worker, const std::string& reason) {
  return plugin_crashes_->Add({{"worker", worker}, {"reason", reason}});
}
prometheus::Counter& Metrics::plugin_restarts(const std::string& worker) {
  return plugin_restarts_->Add({{"worker", worker}});
}
prometheus::Gauge& Metrics::plugin_processes(const std::string& worker) {
  return plugin_processes_->Add({{"worker", worker}});
}
prometheus::Gauge& Metrics::plugin_crashloop(const std::string& worker) {
  return plugin_crashloop_->Add({{"worker", worker}});
}

prometheus::Gauge& Metrics::outbox_pending(const std::string& outbox) {
  return outbox_pending_->Add({{"outbox", outbox}});
}
prometheus::Gauge& Metrics::outbox_dead(const std::string& outbox) {
  return outbox_dead_->Add({{"outbox", outbox}});
}
prometheus::Counter& Metrics::outbox_relayed(const std::string& outbox) {
  return outbox_relayed_->Add({{"outbox", outbox}});
}
prometheus::Gauge& Metrics::outbox_lag_seconds(const std::string& outbox) {
  return outbox_lag_->Add({{"outbox", outbox}});
}

prometheus::Gauge& Metrics::queue_depth(const std::string& queue, const std::string& status) {
  return queue_depth_->Add({{"queue", queue}, {"status", status}});
}

prometheus::Gauge& Metrics::queue_oldest_pending_seconds(const std::string& queue) {
  return queue_oldest_pending_->Add({{"queue", queue}});
}

void Metrics::consumer_connection_opened() {
  std::lock_guard lock(consumer_connections_mutex_);
  ++consumer_connections_open_;
  set_broker_connected_locked();
}

void Metrics::consumer_connection_up(bool up) {
  std::lock_guard lock(consumer_connections_mutex_);
  consumer_connections_up_ += up ? 1 : -1;
  set_broker_connected_locked();
}

void Metrics::consumer_connection_closed(bool was_up) {
  std::lock_guard lock(consumer_connections_mutex_);
  --consumer_connections_open_;
  if (was_up)
    --consumer_connections_up_;
  set_broker_connected_locked();
}

void Metrics::set_broker_connected_locked() {
  broker_connected_->Set(
      consumer_connections_open_ > 0 && consumer_connections_up_ == consumer_connections_open_ ? 1
                                                                                               : 0);
}

prometheus::Counter& Metrics::queue_settlements_dropped(const std::string& queue) {
  return queue_settlements_dropped_->Add({{"queue", queue}});
}

prometheus::Gauge& Metrics::queue_xmin_age_seconds() {
  return queue_xmin_age_->Add({});
}

host_abi::PluginMetric* Metrics::plugin_metric(const std::string& worker, const std::string& plugin,
                                               MetricType type, std::string_view name,
                                               std::string_view help,
                                               std::span<const double> buckets,
                                               std::string& error) {
  return plugin_metric(PluginMetricRequest{worker, plugin, type, name, help, buckets, nullptr},
                       error);
}

host_abi::PluginMetric* Metrics::plugin_labelled_metric(
    const std::string& worker, const std::string& plugin, MetricType type, std::string_view name,
    std::string_view help, std::span<const double> buckets, const PluginLabels& labels,
    std::string& error) {
  if (std::optional<std::string> refusal = host_abi::label_names_refusal(labels.names)) {
    error = "metric '" + host_abi::exported_metric_name(name) + "': " + *refusal;
    return nullptr;
  }
  return plugin_metric(PluginMetricRequest{worker, plugin, type, name, help, buckets, &labels},
                       error);
}

host_abi::PluginMetric* Metrics::plugin_metric(const PluginMetricRequest& request,
                                               std::string& error) {
  const std::string full_name = host_abi::exported_metric_name(request.name);
  if (std::optional<std::string> refusal =
          host_abi::metric_refusal(request.type, full_name, request.buckets)) {
    error = std::move(*refusal);
    return nullptr;
  }
  const bool labelled = request.labels != nullptr;
  const std::vector<std::string> label_names =
      labelled ? request.labels->names : std::vector<std::string>{};
  std::lock_guard lock(plugin_mutex_);
  auto family_it = plugin_families_.find(full_name);
  if (family_it != plugin_families_.end()) {
    const PluginFamily& registered = family_it->second;
    if (registered.type != request.type) {
      error = host_abi::type_clash(full_name, registered.type, request.type);
      return nullptr;
    }
    if (registered.labelled != labelled || registered.label_names != label_names) {
      error = host_abi::label_clash(full_name, registered.label_names, label_names);
      return nullptr;
    }
  }
  const std::string key = full_name + "\x1f" + request.worker;
  if (auto it = plugin_metrics_.find(key); it != plugin_metrics_.end())
    return it->second.get();

  const std::string help_text = request.help.empty() ? "Plugin metric" : std::string(request.help);
  const prometheus::Labels labels{{"worker", request.worker}, {"plugin", request.plugin}};
  std::unique_ptr<host_abi::PluginMetric> metric;
  try {
    void* family = family_it != plugin_families_.end() ? family_it->second.family : nullptr;
    switch (request.type) {
      case MetricType::counter:
        metric =
            make_plugin_metric<prometheus::Counter>(request, full_name, help_text, labels, family);
        break;
      case MetricType::gauge:
        metric =
            make_plugin_metric<prometheus::Gauge>(request, full_name, help_text, labels, family);
        break;
      case MetricType::histogram:
        metric = make_plugin_metric<prometheus::Histogram>(request, full_name, help_text, labels,
                                                           family);
        break;
    }
    plugin_families_[full_name] = PluginFamily{request.type, family, labelled, label_names};
  } catch (const std::exception& e) {
    error = "metric '" + full_name + "' refused: " + e.what();
    return nullptr;
  }
  host_abi::PluginMetric* result = metric.get();
  plugin_metrics_[key] = std::move(metric);
  return result;
}

template <class T>
std::unique_ptr<host_abi::PluginMetric> Metrics::make_plugin_metric(
    const PluginMetricRequest& request, const std::string& full_name, const std::string& help_text,
    const prometheus::Labels& labels, void*& family) {
  if (family == nullptr)
    family = &build_family<T>().Name(full_name).Help(help_text).Register(*registry_);
  auto& typed = *static_cast<prometheus::Family<T>*>(family);
  prometheus::Histogram::BucketBoundaries buckets(request.buckets.begin(), request.buckets.end());
  if (request.labels != nullptr) {
    return std::make_unique<RegistryLabelledMetric<T>>(request.type, full_name, *request.labels,
                                                       typed, labels, std::move(buckets));
  }
  return std::make_unique<RegistryPluginMetric<T>>(request.type,
                                                   add_series(typed, labels, buckets));
}

}  // namespace warren::observability
