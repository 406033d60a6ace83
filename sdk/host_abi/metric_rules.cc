// The rules of metric_rules.h: Prometheus' metric-name grammar, the histogram bucket checks, and
// the words of a refusal.
#include "warren/host_abi/metric_rules.h"

namespace warren::host_abi {
namespace {

bool is_name_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool is_name_char(char c) noexcept {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

// Prometheus' data model: [a-zA-Z_:][a-zA-Z0-9_:]*.
bool is_prometheus_metric_name(std::string_view name) noexcept {
  if (name.empty() || !is_name_start(name.front()))
    return false;
  for (const char c : name) {
    if (!is_name_char(c))
      return false;
  }
  return true;
}

}  // namespace

std::string exported_metric_name(std::string_view name) {
  if (name.starts_with(kPluginMetricPrefix))
    return std::string(name);
  std::string exported(kPluginMetricPrefix);
  exported += name;
  return exported;
}

std::optional<MetricType> metric_type_from_abi(std::uint32_t type) noexcept {
  switch (type) {
    case WARREN_METRIC_COUNTER:
      return MetricType::counter;
    case WARREN_METRIC_HISTOGRAM:
      return MetricType::histogram;
    case WARREN_METRIC_GAUGE:
      return MetricType::gauge;
    default:
      return std::nullopt;
  }
}

std::optional<std::string> metric_refusal(MetricType type, std::string_view exported_name,
                                          std::span<const double> buckets) {
  // Appended rather than `"'" + std::string(...)`: GCC 12 at -O3 reports a false -Wrestrict inside
  // std::string's insert for that form (as in host/src/plugin/file_trust.cc).
  std::string quoted(1, '\'');
  quoted.append(exported_name).append(1, '\'');
  if (exported_name.size() <= kPluginMetricPrefix.size()) {
    return "metric " + quoted + " has no name after the " + std::string(kPluginMetricPrefix) +
           " prefix";
  }
  if (!is_prometheus_metric_name(exported_name)) {
    return "invalid metric name " + quoted + ": use [a-zA-Z_:][a-zA-Z0-9_:]*";
  }
  if (type == MetricType::histogram) {
    if (buckets.empty())
      return "histogram " + quoted + " needs at least one bucket";
    for (std::size_t i = 1; i < buckets.size(); ++i) {
      if (!(buckets[i - 1] < buckets[i]))
        return "histogram " + quoted + ": buckets must be strictly increasing";
    }
  }
  return std::nullopt;
}

std::string type_clash(std::string_view exported_name, MetricType registered, MetricType asked) {
  return "metric '" + std::string(exported_name) + "' is already a " +
         std::string(to_string(registered)) + ", not a " + std::string(to_string(asked));
}

}  // namespace warren::host_abi
