// See host_config.h.
#include "host_config.h"

#include <stdexcept>
#include <utility>

#include "config/config_loader.h"
#include "config/routing_table.h"
#include "transport/transport.h"

namespace warren::testing {

HostConfig HostConfig::load(const std::string& file) {
  return HostConfig(config::load_config(file));
}

HostConfig HostConfig::parse(std::string_view toml, const std::string& source_name) {
  return HostConfig(config::parse_config(toml, source_name));
}

HostConfig::HostConfig(config::Config config)
    : config_(std::move(config)), routing_(config::routing_table(config_)) {}

std::variant<std::vector<std::string>, std::string> HostConfig::route(
    const OutgoingMessage& message) const {
  // As the host's Context::publish hands it to its transport (runtime/message_context.cc).
  transport::OutboundMessage out;
  out.exchange = message.exchange;
  out.routing_key = message.routing_key;
  out.body = message.body;
  out.content_type = message.content_type;
  out.message_id = message.message_id;
  out.headers = message.headers;
  out.mandatory = message.mandatory;
  try {
    return transport::publish_targets(routing_, out);
  } catch (const transport::PublishError& e) {
    return std::string(e.what());
  }
}

RetryPolicy HostConfig::retry_policy(std::string_view worker) const {
  if (const config::WorkerConfig* found = config_.find_worker(worker))
    return from_host(found->retry);
  std::string names;
  for (const config::WorkerConfig& each : config_.workers)
    names += (names.empty() ? "'" : ", '") + each.name + "'";
  throw std::logic_error("the configuration " + config_.file.string() + " has no worker '" +
                         std::string(worker) +
                         "' (its workers: " + (names.empty() ? std::string("none") : names) +
                         "); name the harness's worker after one of them");
}

std::optional<int> HostConfig::max_crashes(std::string_view worker) const {
  if (const config::WorkerConfig* found = config_.find_worker(worker))
    return found->max_crashes;
  return std::nullopt;
}

config::RetryPolicy to_host(const RetryPolicy& policy) {
  config::RetryPolicy host;
  host.max_attempts = policy.max_attempts;
  switch (policy.backoff) {
    case RetryPolicy::Backoff::none:
      host.backoff = config::RetryPolicy::Backoff::none;
      break;
    case RetryPolicy::Backoff::fixed:
      host.backoff = config::RetryPolicy::Backoff::fixed;
      break;
    case RetryPolicy::Backoff::exponential:
      host.backoff = config::RetryPolicy::Backoff::exponential;
      break;
  }
  host.initial = policy.initial;
  host.max = policy.max;
  host.jitter = policy.jitter;
  host.immediate = policy.immediate;
  return host;
}

RetryPolicy from_host(const config::RetryPolicy& host) {
  RetryPolicy policy;
  policy.max_attempts = host.max_attempts;
  switch (host.backoff) {
    case config::RetryPolicy::Backoff::none:
      policy.backoff = RetryPolicy::Backoff::none;
      break;
    case config::RetryPolicy::Backoff::fixed:
      policy.backoff = RetryPolicy::Backoff::fixed;
      break;
    case config::RetryPolicy::Backoff::exponential:
      policy.backoff = RetryPolicy::Backoff::exponential;
      break;
  }
  policy.initial = host.initial;
  policy.max = host.max;
  policy.jitter = host.jitter;
  policy.immediate = host.immediate;
  return policy;
}

}  // namespace warren::testing
