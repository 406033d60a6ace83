// The rules for metrics a plugin creates (PluginContext::counter/gauge/histogram): their
// exported name, which names, types and buckets are refused, and the words for a type clash.
// The host's registry and the test harness both apply these, so a metric the harness accepts
// is one the host accepts.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "warren/metrics.h"

namespace warren::host_abi {

inline constexpr std::string_view kPluginMetricPrefix = "warren_plugin_";

// "emails_total" -> "warren_plugin_emails_total"; a name with the prefix is kept as it is.
std::string exported_metric_name(std::string_view name);

// abi.h's warren_metric_type as a MetricType; std::nullopt for any other value.
std::optional<MetricType> metric_type_from_abi(std::uint32_t type) noexcept;

// Why a metric of this type, exported name and buckets cannot exist, or std::nullopt. The name
// must be a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) with something after the prefix;
// a histogram needs at least one bucket, strictly increasing.
std::optional<std::string> metric_refusal(MetricType type, std::string_view exported_name,
                                          std::span<const double> buckets);

// "metric 'warren_plugin_jobs_total' is already a counter, not a gauge".
std::string type_clash(std::string_view exported_name, MetricType registered, MetricType asked);

}  // namespace warren::host_abi
