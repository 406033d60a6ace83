// See message_context.h.
#include "runtime/message_context.h"

#include <exception>
#include <utility>

#include "observability/log.h"

namespace warren::runtime {
namespace {

// "<exception type>: <what()>", the reason a thrown exception leaves in logs and dead letters;
// `unnamed` stands for the type when the plugin could not name it.
std::string thrown_reason(const host_abi::ReportedOutcome& outcome, const char* unnamed) {
  return (outcome.exception_type.empty() ? std::string(unnamed) : outcome.exception_type) + ": " +
         outcome.reason;
}

// What the dispatcher's retry decision acts on, from the handler's checked report.
HandlerResult handler_result(const host_abi::ReportedOutcome& outcome) {
  HandlerResult result;
  result.reason = outcome.reason;
  switch (outcome.kind) {
    case host_abi::ReportedOutcome::Kind::ack:
      result.kind = HandlerResult::Kind::ack;
      break;
    case host_abi::ReportedOutcome::Kind::retry:
      result.kind = outcome.threw() ? HandlerResult::Kind::failed : HandlerResult::Kind::retry;
      if (outcome.threw())
        result.reason = thrown_reason(outcome, "unknown exception");
      else
        result.delay = outcome.delay;
      break;
    case host_abi::ReportedOutcome::Kind::dead_letter:
      result.kind = outcome.threw() ? HandlerResult::Kind::failed_permanent
                                    : HandlerResult::Kind::dead_letter;
      if (outcome.threw())
        result.reason = thrown_reason(outcome, "warren::PermanentError");
      else if (result.reason.empty())
        result.reason = "dead-lettered by the handler";
      break;
    case host_abi::ReportedOutcome::Kind::invalid:
      result.kind = HandlerResult::Kind::invalid;
      break;
  }
  return result;
}

}  // namespace

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
