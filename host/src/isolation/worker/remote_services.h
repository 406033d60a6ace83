// The services a plugin sees inside a worker process (host_abi/services.h), each one a frame to
// the host, which answers with its real ones: a log line goes to the host's log, a metric to its
// registry, a publish to its broker connection (and the handler waits for the confirm, as it
// would in the host). Settings, headers and the per-message scope stay local.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "isolation/frames.h"
#include "isolation/worker/parent_link.h"
#include "warren/host_abi/services.h"

namespace warren::isolation {

class RemoteMetric;

class RemoteWorkerServices final : public host_abi::WorkerServices {
 public:
  RemoteWorkerServices(ParentLink& link, const Start& start);
  ~RemoteWorkerServices() override;

  std::string_view worker_name() const noexcept override { return worker_; }
  void log(LogLevel level, std::string_view text) noexcept override;
  const std::string* setting(std::string_view key) const noexcept override;
  host_abi::PluginMetric* metric(MetricType type, const std::string& exported_name,
                                 std::string_view help, std::span<const double> buckets,
                                 std::string& refusal) noexcept override;
  host_abi::PluginMetric* labelled_metric(MetricType type, const std::string& exported_name,
                                          std::string_view help, std::span<const double> buckets,
                                          std::span<const std::string> label_names,
                                          std::string& refusal) noexcept override;
  bool log_enabled(LogLevel level) const noexcept override { return level >= log_level_; }

 private:
  host_abi::PluginMetric* declare(MetricDeclare declaration, std::string& refusal) noexcept;

  ParentLink& link_;
  std::string worker_;
  std::map<std::string, std::string, std::less<>> settings_;
  LogLevel log_level_;
  std::mutex mutex_;
  // By name: asked again, the same handle (the host decides whether the types agree).
  std::map<std::string, std::unique_ptr<RemoteMetric>> metrics_;
  std::uint32_t next_metric_ = 1;
};

class RemoteMessageServices final : public host_abi::MessageServices {
 public:
  RemoteMessageServices(ParentLink& link, const Deliver& message) noexcept
      : link_(link), message_(message) {}
  ~RemoteMessageServices() override;

  void log(LogLevel level, std::string_view text) noexcept override;
  std::optional<std::string_view> header(std::string_view name) const noexcept override;
  bool stop_requested() const noexcept override { return link_.cancelled(message_.sequence); }
  void* scope() const noexcept override { return scope_; }
  void set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept override;
  std::optional<std::string> publish(OutgoingMessage message) noexcept override;
  void report(host_abi::ReportedOutcome outcome) noexcept override;

  // What the handler reported; `invalid` ("no outcome reported") if it did not, the first
  // report if it reported twice.
  host_abi::ReportedOutcome take_outcome();

 private:
  ParentLink& link_;
  const Deliver& message_;
  void* scope_ = nullptr;
  warren_scope_destroy_fn destroy_scope_ = nullptr;
  std::optional<host_abi::ReportedOutcome> outcome_;
};

}  // namespace warren::isolation
