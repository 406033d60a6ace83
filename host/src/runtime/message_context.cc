// See message_context.h.
#include "runtime/message_context.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "observability/log.h"

namespace warren::runtime {
namespace {

// Strings a plugin hands us are bounded: a wild size is a bug in the plugin, not a reason to
// copy gigabytes.
constexpr std::size_t kMaxReportedText = 64 * 1024;

std::string bounded(warren_str s) {
  if (s.data == nullptr)
    return {};
  return std::string(s.data, std::min(s.size, kMaxReportedText));
}

std::string_view view(warren_str s) {
  return s.data == nullptr ? std::string_view{} : std::string_view(s.data, s.size);
}

}  // namespace

std::string demangle(std::string_view mangled) {
  if (mangled.empty())
    return {};
  const std::string name(mangled);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> readable(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && readable ? std::string(readable.get()) : name;
}

MessageContext::MessageContext(const InboundMessage& message, WorkerContext& worker,
                               Publisher* publisher, const std::atomic<bool>& stop_requested)
    : message_(message),
      worker_(worker),
      publisher_(publisher),
      stop_requested_(stop_requested),
      trace_(TraceContext::from_headers(message.headers)),
      attempt_(message.attempt) {}

MessageContext::~MessageContext() {
  if (scope_ != nullptr && destroy_scope_ != nullptr)
    destroy_scope_(scope_);
}

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

void MessageContext::log(plugin::LogLevel level, std::string_view text) noexcept {
  observability::log(to_log_level(level),
                     {worker_.worker_name(), message_.message_id, attempt_, trace_.trace_id}, text);
}

std::optional<std::string_view> MessageContext::header(std::string_view name) const noexcept {
  return find_header(message_.headers, name);
}

void MessageContext::set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept {
  if (scope_ != nullptr && destroy_scope_ != nullptr && scope_ != scope)
    destroy_scope_(scope_);
  scope_ = scope;
  destroy_scope_ = destroy;
}

std::optional<std::string> MessageContext::publish(const warren_publish_request& request) noexcept {
  try {
    if (publisher_ == nullptr)
      return std::string("publishing is not available in this host");
    if (request.struct_size < sizeof(warren_publish_request)) {
      return std::string("publish request from an incompatible SDK (struct too small)");
    }
    OutboundMessage out;
    out.exchange = view(request.exchange);
    out.routing_key = view(request.routing_key);
    out.body = view(request.body);
    out.content_type = view(request.content_type);
    out.message_id = view(request.message_id);
    for (std::size_t i = 0; i < request.header_count; ++i) {
      out.headers.emplace_back(std::string(view(request.header_names[i])),
                               std::string(view(request.header_values[i])));
    }
    if (!find_header(out.headers, "traceparent")) {
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

void MessageContext::report(const warren_outcome& outcome) noexcept {
  try {
    if (reported_) {
      log(plugin::LogLevel::warn, "the handler reported a second outcome; the first one stands");
      return;
    }
    reported_ = true;
    HandlerResult result;
    if (outcome.struct_size < sizeof(warren_outcome)) {
      result.kind = HandlerResult::Kind::invalid;
      result.reason = "the handler reported an outcome from an incompatible SDK";
      result_ = std::move(result);
      return;
    }
    error_kind_ = outcome.error_kind;
    const std::string type = demangle(view(outcome.error_type));
    switch (outcome.kind) {
      case WARREN_OUTCOME_ACK:
        result.kind = HandlerResult::Kind::ack;
        break;
      case WARREN_OUTCOME_RETRY:
        result.kind = HandlerResult::Kind::retry;
        if (outcome.delay_ms >= 0)
          result.delay = std::chrono::milliseconds(outcome.delay_ms);
        if (outcome.delay_ms < -1) {
          result.kind = HandlerResult::Kind::invalid;
          result.reason = "the handler asked for a negative retry delay";
        }
        break;
      case WARREN_OUTCOME_DEAD_LETTER:
        result.kind = HandlerResult::Kind::dead_letter;
        result.reason = bounded(outcome.reason);
        if (result.reason.empty())
          result.reason = "dead-lettered by the handler";
        break;
      case WARREN_OUTCOME_THREW:
        result.kind = HandlerResult::Kind::failed;
        result.reason = (type.empty() ? std::string("unknown exception") : type) + ": " +
                        bounded(outcome.reason);
        break;
      case WARREN_OUTCOME_THREW_PERMANENT:
        result.kind = HandlerResult::Kind::failed_permanent;
        result.reason = (type.empty() ? std::string("warren::PermanentError") : type) + ": " +
                        bounded(outcome.reason);
        break;
      default:
        result.kind = HandlerResult::Kind::invalid;
        result.reason =
            "the handler returned an invalid outcome (kind " + std::to_string(outcome.kind) + ")";
    }
    result_ = std::move(result);
  } catch (...) {
    result_ = HandlerResult{};
  }
}

}  // namespace warren::runtime
