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

// Label names the host puts on every plugin metric, or Prometheus gives a meaning to: a plugin
// cannot declare them.
inline constexpr std::string_view kReservedLabelNames[] = {"worker", "plugin", "le", "quantile"};

// Why a labelled metric cannot have these label names, or std::nullopt: at most
// kMaxMetricLabels (warren/metrics.h), each a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)
// not starting with "__", none reserved, none twice.
std::optional<std::string> label_names_refusal(std::span<const std::string> label_names);

// "metric 'warren_plugin_emails_total' already has the labels (locale), not (tier)".
std::string label_clash(std::string_view exported_name, std::span<const std::string> registered,
                        std::span<const std::string> asked);

// `value` with every byte that is not part of valid UTF-8 replaced by U+FFFD: the exposition
// format is UTF-8, and a label value may come from message data.
std::string valid_label_value(std::string_view value);

}  // namespace warren::host_abi
