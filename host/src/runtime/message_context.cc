// See message_context.h.
#include "runtime/message_context.h"

#include <exception>
#include <utility>

#include "observability/log.h"
#include "runtime/handler_result.h"

namespace warren::runtime {
MessageContext::MessageContext(const transport::InboundMessage& message, WorkerContext& worker,
                               transport::Publisher* publisher,
                               const std::atomic<bool>& stop_requested)
    : message_(message),
      worker_(worker),
      publisher_(publisher),
      stop_requested_(stop_requested),
      trace_(TraceContext::from_headers(message.headers)),
      attempt_(message.attempt) {}

void MessageContext::begin_attempt(std::uint32_t attempt) noexcept {
  attempt_ = attempt;
  reported_ = false;
  result_ = HandlerResult{};
  error_kind_ = WARREN_ERROR_NONE;
}

HandlerResult MessageContext::result() const {
  if (!reported_) {
    HandlerResult missing;
    missing.kind = HandlerResult::Kind::invalid;
    missing.reason = "the handler reported no outcome";
    return missing;
  }
  return result_;
}

void MessageContext::log(LogLevel level, std::string_view text) noexcept {
  observability::log(level, {worker_.worker_name(), message_.message_id, attempt_, trace_.trace_id},
                     text);
}

std::optional<std::string_view> MessageContext::header(std::string_view name) const noexcept {
  return transport::find_header(message_.headers, name);
}

std::optional<std::string> MessageContext::publish(OutgoingMessage message) noexcept {
  try {
    if (publisher_ == nullptr)
      return std::string("publishing is not available in this host");
    transport::OutboundMessage out;
    out.exchange = std::move(message.exchange);
    out.routing_key = std::move(message.routing_key);
    out.body = std::move(message.body);
    out.content_type = std::move(message.content_type);
    out.message_id = std::move(message.message_id);
    out.headers = std::move(message.headers);
    out.mandatory = message.mandatory;
    if (!transport::find_header(out.headers, "traceparent")) {
      out.headers.emplace_back("traceparent", trace_.child_traceparent());
      if (!trace_.tracestate.empty())
        out.headers.emplace_back("tracestate", trace_.tracestate);
    }
    publisher_->publish(out);
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  } catch (...) {
    return std::string("publish failed");
  }
}

void MessageContext::report(host_abi::ReportedOutcome outcome) noexcept {
  try {
    if (reported_) {
      log(LogLevel::warn, "the handler reported a second outcome; the first one stands");
      return;
    }
    reported_ = true;
    error_kind_ = static_cast<std::uint32_t>(outcome.error);
    result_ = handler_result(outcome);
  } catch (...) {
    result_ = HandlerResult{};
  }
}

}  // namespace warren::runtime
