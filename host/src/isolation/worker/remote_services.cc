#include "isolation/worker/remote_services.h"

namespace warren::isolation {

// A metric handle in the worker: recording sends a MetricRecord; a labelled one hands out one
// handle per combination of values, all recording under the same metric number.
class RemoteMetric final : public host_abi::PluginMetric {
 public:
  RemoteMetric(ParentLink& link, MetricType type, std::uint32_t metric, std::size_t labels,
               std::vector<std::string> label_values = {})
      : PluginMetric(type),
        link_(link),
        metric_(metric),
        labels_(labels),
        label_values_(std::move(label_values)) {}

  std::size_t label_count() const noexcept override { return label_values_.empty() ? labels_ : 0; }

  host_abi::PluginMetric* series(std::span<const std::string_view> values) noexcept override {
    if (labels_ == 0 || !label_values_.empty() || values.size() != labels_)
      return nullptr;
    try {
      std::vector<std::string> key(values.begin(), values.end());
      std::lock_guard lock(mutex_);
      auto& series = series_[key];
      if (!series)
        series = std::make_unique<RemoteMetric>(link_, type(), metric_, labels_, std::move(key));
      return series.get();
    } catch (...) {
      return nullptr;
    }
  }

 private:
  void apply(double value) noexcept override {
    try {
      link_.post(MetricRecord{metric_, label_values_, value});
    } catch (...) {
      // A record lost to memory pressure: the handler goes on.
    }
  }

  ParentLink& link_;
  std::uint32_t metric_;
  std::size_t labels_;
  std::vector<std::string> label_values_;  // a series of a labelled metric
  std::mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<RemoteMetric>> series_;
};

RemoteWorkerServices::RemoteWorkerServices(ParentLink& link, const Start& start)
    : link_(link),
      worker_(start.worker),
      settings_(start.settings.begin(), start.settings.end()),
      log_level_(start.log_level) {}

RemoteWorkerServices::~RemoteWorkerServices() = default;

void RemoteWorkerServices::log(LogLevel level, std::string_view text) noexcept {
  try {
    link_.post(LogLine{0, level, std::string(text)});
  } catch (...) {
  }
}

const std::string* RemoteWorkerServices::setting(std::string_view key) const noexcept {
  auto found = settings_.find(key);
  return found == settings_.end() ? nullptr : &found->second;
}

host_abi::PluginMetric* RemoteWorkerServices::declare(MetricDeclare declaration,
                                                      std::string& refusal) noexcept {
  try {
    std::lock_guard lock(mutex_);
    auto& held = metrics_[declaration.name];
    if (held)
      return held.get();
    declaration.metric = next_metric_++;
    std::size_t labels = declaration.label_names.size();
    MetricType type = declaration.type;
    std::uint32_t metric = declaration.metric;
    std::string name = declaration.name;
    refusal = link_.declare_metric(std::move(declaration));
    if (!refusal.empty()) {
      metrics_.erase(name);
      return nullptr;
    }
    held = std::make_unique<RemoteMetric>(link_, type, metric, labels);
    return held.get();
  } catch (const std::exception& error) {
    refusal = error.what();
    return nullptr;
  }
}

host_abi::PluginMetric* RemoteWorkerServices::metric(MetricType type,
                                                     const std::string& exported_name,
                                                     std::string_view help,
                                                     std::span<const double> buckets,
                                                     std::string& refusal) noexcept {
  try {
    return declare(MetricDeclare{0,
                                 type,
                                 exported_name,
                                 std::string(help),
                                 std::vector<double>(buckets.begin(), buckets.end()),
                                 {}},
                   refusal);
  } catch (...) {
    refusal = "out of memory";
    return nullptr;
  }
}

host_abi::PluginMetric* RemoteWorkerServices::labelled_metric(
    MetricType type, const std::string& exported_name, std::string_view help,
    std::span<const double> buckets, std::span<const std::string> label_names,
    std::string& refusal) noexcept {
  try {
    return declare(MetricDeclare{0, type, exported_name, std::string(help),
                                 std::vector<double>(buckets.begin(), buckets.end()),
                                 std::vector<std::string>(label_names.begin(), label_names.end())},
                   refusal);
  } catch (...) {
    refusal = "out of memory";
    return nullptr;
  }
}

RemoteMessageServices::~RemoteMessageServices() {
  if (scope_ != nullptr && destroy_scope_ != nullptr)
    destroy_scope_(scope_);
}

void RemoteMessageServices::log(LogLevel level, std::string_view text) noexcept {
  try {
    link_.post(LogLine{message_.sequence, level, std::string(text)});
  } catch (...) {
  }
}

std::optional<std::string_view> RemoteMessageServices::header(
    std::string_view name) const noexcept {
  for (const auto& [key, value] : message_.headers) {
    if (key == name)
      return std::string_view(value);
  }
  return std::nullopt;
}

void RemoteMessageServices::set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept {
  scope_ = scope;
  destroy_scope_ = destroy;
}

std::optional<std::string> RemoteMessageServices::publish(OutgoingMessage message) noexcept {
  try {
    return link_.publish(message_.sequence, std::move(message));
  } catch (const std::exception& error) {
    return std::string(error.what());
  }
}

void RemoteMessageServices::report(host_abi::ReportedOutcome outcome) noexcept {
  if (!outcome_)
    outcome_ = std::move(outcome);
}

host_abi::ReportedOutcome RemoteMessageServices::take_outcome() {
  if (outcome_)
    return std::move(*outcome_);
  host_abi::ReportedOutcome missing;
  missing.kind = host_abi::ReportedOutcome::Kind::invalid;
  missing.reason = "the handler reported no outcome";
  return missing;
}

}  // namespace warren::isolation
