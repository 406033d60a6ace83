// See metrics.h. Metric names and labels here are the contract of issue "Prometheus metrics":
// change them only with the dashboards and alert rules in packaging/.
#include "observability/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include "warren_version.h"

namespace warren::observability {
namespace {

template <class T>
T* alternative(
    const std::variant<prometheus::Counter*, prometheus::Gauge*, prometheus::Histogram*>& v) {
  auto* const* p = std::get_if<T*>(&v);
  return p == nullptr ? nullptr : *p;
}

const char* type_name(PluginMetricType type) {
  switch (type) {
    case PluginMetricType::counter:
      return "counter";
    case PluginMetricType::gauge:
      return "gauge";
    case PluginMetricType::histogram:
      return "histogram";
  }
  return "?";
}

}  // namespace

void PluginMetric::record(double value) noexcept {
  if (auto* counter = alternative<prometheus::Counter>(metric_)) {
    if (value >= 0)
      counter->Increment(value);
  } else if (auto* gauge = alternative<prometheus::Gauge>(metric_)) {
    gauge->Set(value);
  } else if (auto* histogram = alternative<prometheus::Histogram>(metric_)) {
    histogram->Observe(value);
  }
}

const prometheus::Histogram::BucketBoundaries& Metrics::duration_buckets() {
  static const prometheus::Histogram::BucketBoundaries buckets{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
  return buckets;
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
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
                    .Help("Publishes by result (confirmed|nacked|returned|timeout)")
                    .Register(r);
  plugin_info_ = &prometheus::BuildGauge()
                      .Name("warren_plugin_info")
                      .Help("The plugin each worker runs (always 1)")
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

prometheus::Counter& Metrics::published(const std::string& exchange, const std::string& result) {
  return published_->Add({{"exchange", exchange}, {"result", result}});
}

void Metrics::set_plugin_info(const std::string& plugin, const std::string& version,
                              const std::string& worker) {
  plugin_info_->Add({{"plugin", plugin}, {"version", version}, {"worker", worker}}).Set(1);
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

PluginMetric* Metrics::plugin_metric(const std::string& worker, const std::string& plugin,
                                     PluginMetricType type, std::string_view name,
                                     std::string_view help, std::span<const double> buckets,
                                     std::string& error) {
  std::string full_name(name);
  if (!full_name.starts_with("warren_plugin_"))
    full_name = "warren_plugin_" + full_name;
  if (!prometheus::CheckMetricName(full_name)) {
    error = "invalid metric name '" + full_name + "': use [a-zA-Z_:][a-zA-Z0-9_:]*";
    return nullptr;
  }
  if (type == PluginMetricType::histogram) {
    if (buckets.empty()) {
      error = "histogram '" + full_name + "' needs at least one bucket";
      return nullptr;
    }
    for (std::size_t i = 1; i < buckets.size(); ++i) {
      if (!(buckets[i - 1] < buckets[i])) {
        error = "histogram '" + full_name + "': buckets must be strictly increasing";
        return nullptr;
      }
    }
  }
  std::lock_guard lock(plugin_mutex_);
  const std::string key = full_name + "\x1f" + worker;
  if (auto it = plugin_metrics_.find(key); it != plugin_metrics_.end()) {
    if (plugin_families_.at(full_name).type == type)
      return it->second.get();
  }
  auto family_it = plugin_families_.find(full_name);
  if (family_it != plugin_families_.end() && family_it->second.type != type) {
    error = "metric '" + full_name + "' is already a " + type_name(family_it->second.type) +
            ", not a " + type_name(type);
    return nullptr;
  }
  const std::string help_text = help.empty() ? "Plugin metric" : std::string(help);
  const prometheus::Labels labels{{"worker", worker}, {"plugin", plugin}};
  std::unique_ptr<PluginMetric> metric;
  try {
    switch (type) {
      case PluginMetricType::counter: {
        auto& family =
            family_it != plugin_families_.end()
                ? *static_cast<prometheus::Family<prometheus::Counter>*>(family_it->second.family)
                : prometheus::BuildCounter().Name(full_name).Help(help_text).Register(*registry_);
        plugin_families_[full_name] = {type, &family};
        metric = std::make_unique<PluginMetric>(family.Add(labels));
        break;
      }
      case PluginMetricType::gauge: {
        auto& family =
            family_it != plugin_families_.end()
                ? *static_cast<prometheus::Family<prometheus::Gauge>*>(family_it->second.family)
                : prometheus::BuildGauge().Name(full_name).Help(help_text).Register(*registry_);
        plugin_families_[full_name] = {type, &family};
        metric = std::make_unique<PluginMetric>(family.Add(labels));
        break;
      }
      case PluginMetricType::histogram: {
        auto& family =
            family_it != plugin_families_.end()
                ? *static_cast<prometheus::Family<prometheus::Histogram>*>(family_it->second.family)
                : prometheus::BuildHistogram().Name(full_name).Help(help_text).Register(*registry_);
        plugin_families_[full_name] = {type, &family};
        metric = std::make_unique<PluginMetric>(family.Add(
            labels, prometheus::Histogram::BucketBoundaries(buckets.begin(), buckets.end())));
        break;
      }
    }
  } catch (const std::exception& e) {
    error = "metric '" + full_name + "' refused: " + e.what();
    return nullptr;
  }
  PluginMetric* result = metric.get();
  plugin_metrics_[key] = std::move(metric);
  return result;
}

}  // namespace warren::observability
