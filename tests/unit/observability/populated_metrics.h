// A Metrics registry with every family Warren exposes holding at least one series: what the
// exposition checks (promtool, and the names the packaging relies on) look at.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "observability/metrics.h"

namespace warren::observability::testing {

inline void populate_every_family(Metrics& metrics) {
  auto worker = metrics.worker("orders", "orders.q");
  worker.received->Increment(10);
  worker.settled_ack->Increment(6);
  worker.settled_retry->Increment(2);
  worker.settled_dead_letter->Increment();
  worker.settled_requeue->Increment();
  worker.handler_duration->Observe(0.003);
  worker.handler_duration->Observe(2.0);
  worker.exceptions_std->Increment();
  worker.exceptions_permanent->Increment();
  worker.exceptions_unknown->Increment();
  worker.in_flight->Set(2);
  worker.duplicates->Increment();
  metrics.broker_connected().Set(1);
  metrics.broker_reconnects().Increment();
  metrics.broker_blocked().Set(0);
  metrics.stale_acks_dropped().Increment();
  for (const char* result : {"confirmed", "nacked", "returned", "timeout"})
    metrics.published("livraria.events", result).Increment();
  metrics.set_plugin_info("livraria", "1.2.0", "orders");
  metrics.crash_suspects("orders").Increment(2);
  metrics.dead_lettered("orders", "crash").Increment();
  metrics.outbox_pending("orders").Set(3);
  metrics.outbox_dead("orders").Set(0);
  metrics.outbox_relayed("orders").Increment(5);
  metrics.outbox_lag_seconds("orders").Set(1.5);

  std::string error;
  const std::vector<double> buckets{0.01, 0.1, 1};
  for (const auto& [type, name] : {std::pair{MetricType::counter, "emails_sent_total"},
                                   std::pair{MetricType::gauge, "cache_entries"},
                                   std::pair{MetricType::histogram, "render_seconds"}}) {
    auto* metric = metrics.plugin_metric("orders", "livraria", type, name, "", buckets, error);
    if (metric == nullptr)
      throw std::logic_error("plugin metric " + std::string(name) + " refused: " + error);
    metric->record(0.05);
  }
}

}  // namespace warren::observability::testing
