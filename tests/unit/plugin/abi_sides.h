// The two implementations of the host's side of the plugin ABI, each wrapped to run one handle()
// call of a RawPlugin script and say what happened in the same words: the host (HandlerInstance
// over the runtime's WorkerContext and MessageContext, the real metrics registry and a recording
// publisher) and warren::testing::Harness. Both serve the worker "w" with the setting
// greeting=hello and the message m-1 with the header x-tenant=acme.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "observability/metrics.h"
#include "plugin/handler_instance.h"
#include "raw_plugin.h"
#include "runtime/message_context.h"
#include "runtime/worker_context.h"
#include "transport/transport.h"
#include "warren/testing/harness.h"

namespace warren::plugin::testing {

// What one side did with one handle() call.
struct Observation {
  std::string seen;     // what the plugin saw (its script's words)
  std::string settled;  // "ack", "retry after 250 ms", "retry, threw std_exception", "invalid"...
  std::string reason;   // the reason as the side keeps it
  // "exchange|routing key|body|content type|message id|name=value;..." (trace headers left out:
  // the host adds them, the harness does not)
  std::vector<std::string> published;
};

inline std::string error_name(host_abi::HandlerError error) {
  return std::string(warren::testing::to_string(error));
}

inline std::string describe(const OutgoingMessage& message) {
  std::string text = message.exchange + "|" + message.routing_key + "|" + message.body + "|" +
                     message.content_type + "|" + message.message_id + "|" +
                     (message.mandatory ? "" : "not mandatory|");
  for (const auto& [name, value] : message.headers) {
    if (name != "traceparent" && name != "tracestate")
      text += name + "=" + value + ";";
  }
  return text;
}

inline std::string with_delay(std::string kind, std::optional<std::chrono::milliseconds> delay) {
  return delay ? kind + " after " + std::to_string(delay->count()) + " ms" : kind;
}

class HostSide {
 public:
  HostSide()
      : worker_("w", "raw", {{"greeting", "hello"}}, metrics_),
        handler_(RawPlugin::library(), worker_) {}

  Observation run(const RawScript& script) {
    transport::InboundMessage inbound;
    inbound.queue = "q";
    inbound.exchange = "orders";
    inbound.routing_key = "order.created";
    inbound.message_id = "m-1";
    inbound.body = "{}";
    inbound.headers = {{"x-tenant", "acme"}};
    Observation observed;
    {
      runtime::MessageContext context(inbound, worker_, &publisher_, stop_);
      context.begin_attempt(1);
      warren_message view{};
      view.struct_size = sizeof view;
      view.body = detail::to_abi(inbound.body);
      view.message_id = detail::to_abi(inbound.message_id);
      view.attempt = 1;
      {
        const RawPlugin::Script installed(script, observed.seen);
        handler_.handle(view, context);
      }
      const runtime::HandlerResult result = context.result();
      const auto error = static_cast<host_abi::HandlerError>(context.error_kind());
      observed.reason = result.reason;
      switch (result.kind) {
        case runtime::HandlerResult::Kind::ack:
          observed.settled = "ack";
          break;
        case runtime::HandlerResult::Kind::retry:
          observed.settled = with_delay("retry", result.delay);
          break;
        case runtime::HandlerResult::Kind::failed:
          observed.settled = "retry, threw " + error_name(error);
          break;
        case runtime::HandlerResult::Kind::dead_letter:
          observed.settled = "dead_letter";
          break;
        case runtime::HandlerResult::Kind::failed_permanent:
          observed.settled = "dead_letter, threw " + error_name(error);
          break;
        case runtime::HandlerResult::Kind::invalid:
          observed.settled = "invalid";
          break;
      }
    }  // the message settles: its scope dies with its context
    observed.published = std::move(publisher_.published);
    publisher_.published.clear();
    return observed;
  }

  // The next publish is refused by the broker with this reason.
  void fail_next_publish(std::string reason) { publisher_.failures.push_back(std::move(reason)); }

  // The value of a counter or gauge of this worker, as /metrics shows it.
  std::optional<double> metric_value(const std::string& exported_name) const {
    const std::string prefix = exported_name + "{plugin=\"raw\",worker=\"w\"} ";
    std::istringstream lines(metrics_.serialize());
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(prefix))
        return std::stod(line.substr(prefix.size()));
    }
    return std::nullopt;
  }

 private:
  class RecordingPublisher final : public transport::Publisher {
   public:
    void publish(const transport::OutboundMessage& message) override {
      if (!failures.empty()) {
        const std::string reason = failures.front();
        failures.pop_front();
        throw transport::PublishError(transport::PublishError::Reason::nacked, reason);
      }
      published.push_back(describe(
          OutgoingMessage{message.exchange, message.routing_key, message.body, message.content_type,
                          message.message_id, message.headers, message.mandatory}));
    }
    std::deque<std::string> failures;
    std::vector<std::string> published;
  };

  observability::Metrics metrics_;
  runtime::WorkerContext worker_;
  HandlerInstance handler_;
  RecordingPublisher publisher_;
  std::atomic<bool> stop_{false};
};

class HarnessSide {
 public:
  HarnessSide() : harness_(RawPlugin::descriptor(), {{"greeting", "hello"}}, "w") {}

  Observation run(const RawScript& script) {
    warren::testing::TestMessage message;
    message.exchange = "orders";
    message.routing_key = "order.created";
    message.message_id = "m-1";
    message.body = "{}";
    message.headers = {{"x-tenant", "acme"}};
    Observation observed;
    const std::size_t published_before = harness_.published().size();
    try {
      const RawPlugin::Script installed(script, observed.seen);
      const warren::testing::Result result = harness_.deliver(message);
      observed.reason = result.reason;
      const std::string kind(warren::testing::to_string(result.kind));
      observed.settled = result.threw ? kind + ", threw " + error_name(result.error)
                                      : with_delay(kind, result.delay);
    } catch (const std::logic_error& broken) {  // what the harness makes of a broken report
      observed.settled = "invalid";
      observed.reason = broken.what();
    }
    const auto published = harness_.published();
    for (std::size_t i = published_before; i < published.size(); ++i)
      observed.published.push_back(describe(published[i]));
    return observed;
  }

  void fail_next_publish(std::string reason) { harness_.fail_next_publish(std::move(reason)); }

  std::optional<double> metric_value(const std::string& exported_name) const {
    const auto metrics = harness_.metrics();
    const auto it = metrics.find(exported_name);
    if (it == metrics.end())
      return std::nullopt;
    return it->second.type == MetricType::gauge ? it->second.last() : it->second.sum();
  }

 private:
  warren::testing::Harness harness_;
};

}  // namespace warren::plugin::testing
