// What the harness takes from a warren.toml, read with the host's own loader: the exchanges,
// queues and bindings it routes publishes through (the in-process routing of the table-queue
// transports, transport/routing.h) and the workers' retry policies. Internal to the harness.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"
#include "transport/routing.h"
#include "warren/outgoing_message.h"
#include "warren/testing/harness.h"

namespace warren::testing {

class HostConfig {
 public:
  // Throw std::runtime_error (config::ConfigError) listing every problem, as `warren check` does.
  static HostConfig load(const std::string& file);
  static HostConfig parse(std::string_view toml, const std::string& source_name);

  // The queues `message` reaches, or why the host's publish would fail (the PublishError text
  // Context::publish throws).
  std::variant<std::vector<std::string>, std::string> route(const OutgoingMessage& message) const;

  // The retry policy of `worker`; throws std::logic_error naming the workers when it is absent.
  RetryPolicy retry_policy(std::string_view worker) const;
  // The max_crashes of `worker`, or std::nullopt when the configuration has no such worker.
  std::optional<int> max_crashes(std::string_view worker) const;

 private:
  explicit HostConfig(config::Config config);

  config::Config config_;
  transport::RoutingTable routing_;
};

// The harness's RetryPolicy (standard library only) and the host's, field by field.
config::RetryPolicy to_host(const RetryPolicy& policy);
RetryPolicy from_host(const config::RetryPolicy& policy);

}  // namespace warren::testing
