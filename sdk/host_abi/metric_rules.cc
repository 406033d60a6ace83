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

// Prometheus' label names: [a-zA-Z_][a-zA-Z0-9_]*.
bool is_prometheus_label_name(std::string_view name) noexcept {
  if (name.empty() || name.front() == ':' || !is_name_start(name.front()))
    return false;
  for (const char c : name) {
    if (c == ':' || !is_name_char(c))
      return false;
  }
  return true;
}

std::string joined(std::span<const std::string> names) {
  std::string text = "(";
  for (std::size_t i = 0; i < names.size(); ++i)
    text.append(i == 0 ? "" : ", ").append(names[i]);
  return text + ")";
}

// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 when it is not one.
std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80)
    return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    low = lead == 0xE0 ? 0xA0 : 0x80;
    high = lead == 0xED ? 0x9F : 0xBF;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    low = lead == 0xF0 ? 0x90 : 0x80;
    high = lead == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (i + length > s.size() || byte(i + 1) < low || byte(i + 1) > high)
    return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
      return 0;
  }
  return length;
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

std::optional<std::string> label_names_refusal(std::span<const std::string> label_names) {
  if (label_names.size() > kMaxMetricLabels) {
    return std::to_string(label_names.size()) + " label names, more than the " +
           std::to_string(kMaxMetricLabels) + " a metric may have";
  }
  for (std::size_t i = 0; i < label_names.size(); ++i) {
    const std::string& name = label_names[i];
    const std::string quoted = "'" + name + "'";
    if (!is_prometheus_label_name(name))
      return "invalid label name " + quoted + ": use [a-zA-Z_][a-zA-Z0-9_]*";
    if (name.starts_with("__"))
      return "label name " + quoted + ": names starting with \"__\" are Prometheus' own";
    for (const std::string_view reserved : kReservedLabelNames) {
      if (name == reserved)
        return "label name " + quoted + " is reserved (the host's or Prometheus' own)";
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (label_names[j] == name)
        return "label name " + quoted + " is declared twice";
    }
  }
  return std::nullopt;
}

std::string label_clash(std::string_view exported_name, std::span<const std::string> registered,
                        std::span<const std::string> asked) {
  return "metric '" + std::string(exported_name) + "' already has the labels " +
         joined(registered) + ", not " + joined(asked);
}

std::string valid_label_value(std::string_view value) {
  std::string valid;
  valid.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const std::size_t length = utf8_length(value, i);
    if (length == 0) {
      valid += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      valid.append(value.substr(i, length));
      i += length;
    }
  }
  return valid;
}

std::string type_clash(std::string_view exported_name, MetricType registered, MetricType asked) {
  return "metric '" + std::string(exported_name) + "' is already a " +
         std::string(to_string(registered)) + ", not a " + std::string(to_string(asked));
}

}  // namespace warren::host_abi
