// Plugin-defined metrics. They live in the host's registry (exposed on /metrics as
// warren_plugin_<name>{worker,plugin}), never in a registry of the plugin's own. A handle comes
// from PluginContext::counter/gauge/histogram; default-constructed, it records nothing.
//
// Labelled metrics (SDK 1.2): PluginContext::counter(name, help, {"locale"}) declares the label
// names and returns a LabelledCounter; each update names the values, in the same order:
//   emails.inc({"pt-BR"});                  // finds the series on every call (a host lookup)
//   const warren::Counter pt = emails.labels({"pt-BR"});  // found once: keep it,
//   pt.inc();                                             // and recording costs what an
//                                                         // unlabelled counter's does
// The host keeps at most a bounded number of series per metric and worker (100 unless the
// worker's metric_series_limit says otherwise); values past it are recorded in the series whose
// every label is "__overflow__", and the host logs a warning once. Label values should come from
// a small set (a locale, a tenant tier), never from message ids or free text.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "warren/abi.h"
#include "warren/detail/strings.h"

namespace warren {

class PluginContext;

// The kind of a plugin metric, as the host, the harness and abi.h's warren_metric_type number it.
enum class MetricType : std::uint32_t {
  counter = WARREN_METRIC_COUNTER,
  histogram = WARREN_METRIC_HISTOGRAM,
  gauge = WARREN_METRIC_GAUGE,
};

constexpr std::string_view to_string(MetricType type) noexcept {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::histogram:
      return "histogram";
    case MetricType::gauge:
      return "gauge";
  }
  return "invalid";
}

// A handle that does nothing when the host refused the metric (the host logs why).
class Metric {
 public:
  Metric() = default;

  bool valid() const noexcept { return handle_ != nullptr; }

 protected:
  Metric(const warren_host_api* host, void* handle) noexcept : host_(host), handle_(handle) {}

  void record(double value) const noexcept {
    if (handle_ != nullptr)
      host_->metric_record(handle_, value);
  }

 private:
  const warren_host_api* host_ = nullptr;
  void* handle_ = nullptr;
};

template <class M>
class Labelled;

class Counter : public Metric {
 public:
  Counter() = default;
  // A negative increment is ignored: a counter only goes up.
  void inc(double amount = 1.0) const noexcept { record(amount); }

 private:
  friend class PluginContext;
  friend class Labelled<Counter>;
  Counter(const warren_host_api* host, void* handle) noexcept : Metric(host, handle) {}
};

class Histogram : public Metric {
 public:
  Histogram() = default;
  void observe(double value) const noexcept { record(value); }

 private:
  friend class PluginContext;
  friend class Labelled<Histogram>;
  Histogram(const warren_host_api* host, void* handle) noexcept : Metric(host, handle) {}
};

class Gauge : public Metric {
 public:
  Gauge() = default;
  void set(double value) const noexcept { record(value); }

 private:
  friend class PluginContext;
  friend class Labelled<Gauge>;
  Gauge(const warren_host_api* host, void* handle) noexcept : Metric(host, handle) {}
};

// At most this many label names per metric (the host refuses more).
inline constexpr std::size_t kMaxMetricLabels = 8;

// Label values of one update, in the order the names were declared.
using LabelValues = std::initializer_list<std::string_view>;

// A metric with label names (PluginContext::counter/gauge/histogram with label names):
// labels(values) is the series of those values, a Counter, Gauge or Histogram to keep. On a host
// older than SDK 1.2 (no labelled metrics) the metric was registered without labels and every
// series is that one metric: updates are recorded, unlabelled. Default-constructed, or refused by
// the host (it logs why), every series records nothing.
template <class M>
class Labelled {
 public:
  Labelled() = default;

  bool valid() const noexcept { return handle_ != nullptr; }

  // The series for `values` (one per label name, in order): created by the host on first use.
  // A wrong number of values is a series that records nothing.
  M labels(LabelValues values) const noexcept {
    if (handle_ == nullptr)
      return M();
    if (!labelled_)
      return M(host_, handle_);
    if (values.size() > kMaxMetricLabels)
      return M();
    std::array<warren_str, kMaxMetricLabels> abi_values{};
    std::size_t count = 0;
    for (const std::string_view value : values)
      abi_values[count++] = detail::to_abi(value);
    return M(host_, host_->metric_series(handle_, abi_values.data(), count));
  }

 private:
  friend class PluginContext;
  Labelled(const warren_host_api* host, void* handle, bool labelled) noexcept
      : host_(host), handle_(handle), labelled_(labelled) {}

  const warren_host_api* host_ = nullptr;
  void* handle_ = nullptr;
  bool labelled_ = false;  // false: an older host, `handle_` is an unlabelled metric
};

class LabelledCounter : public Labelled<Counter> {
 public:
  LabelledCounter() = default;
  explicit LabelledCounter(Labelled<Counter> base) noexcept : Labelled<Counter>(base) {}
  void inc(LabelValues values, double amount = 1.0) const noexcept { labels(values).inc(amount); }
};

class LabelledGauge : public Labelled<Gauge> {
 public:
  LabelledGauge() = default;
  explicit LabelledGauge(Labelled<Gauge> base) noexcept : Labelled<Gauge>(base) {}
  void set(LabelValues values, double value) const noexcept { labels(values).set(value); }
};

class LabelledHistogram : public Labelled<Histogram> {
 public:
  LabelledHistogram() = default;
  explicit LabelledHistogram(Labelled<Histogram> base) noexcept : Labelled<Histogram>(base) {}
  void observe(LabelValues values, double value) const noexcept { labels(values).observe(value); }
};

}  // namespace warren
