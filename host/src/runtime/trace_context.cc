// See trace_context.h. Format: version "-" trace-id "-" parent-id "-" flags, lowercase hex.
#include "runtime/trace_context.h"

#include <algorithm>

#include "transport/ids.h"

namespace warren::runtime {
namespace {

bool is_lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool all_zero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

// Version 00 is exactly 55 characters; a later version may append fields after a '-', which a
// version-00 reader ignores (W3C trace context, "Versioning of traceparent").
bool has_valid_length(std::string_view traceparent) {
  if (traceparent.size() < 55)
    return false;
  if (traceparent.substr(0, 2) == "00")
    return traceparent.size() == 55;
  return traceparent.size() == 55 || traceparent[55] == '-';
}

}  // namespace

TraceContext TraceContext::from_headers(const transport::TextHeaders& headers) {
  TraceContext context;
  const auto parent = transport::find_header(headers, "traceparent");
  // 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters for version 00.
  if (parent && has_valid_length(*parent) && (*parent)[2] == '-' && (*parent)[35] == '-' &&
      (*parent)[52] == '-') {
    const std::string_view version = parent->substr(0, 2);
    const std::string_view trace = parent->substr(3, 32);
    const std::string_view span = parent->substr(36, 16);
    const std::string_view flags = parent->substr(53, 2);
    if (is_lower_hex(version) && version != "ff" && is_lower_hex(trace) && !all_zero(trace) &&
        is_lower_hex(span) && !all_zero(span) && is_lower_hex(flags)) {
      context.trace_id = trace;
      context.parent_id = span;
      context.flags = flags;
      if (const auto state = transport::find_header(headers, "tracestate"))
        context.tracestate = *state;
      return context;
    }
  }
  context.trace_id = transport::random_hex(16);
  context.started_here = true;
  return context;
}

std::string TraceContext::child_traceparent() const {
  return "00-" + trace_id + "-" + transport::random_hex(8) + "-" + flags;
}

void TraceContext::carry_into(const transport::InboundMessage& message,
                              transport::Settlement& settlement) const {
  // Only a copy published again (a retry, a dead letter) carries headers: an ack or a requeue
  // would build a span id for nothing, on every message.
  using Kind = transport::Settlement::Kind;
  if (!started_here || settlement.kind == Kind::ack || settlement.kind == Kind::requeue)
    return;
  // extra_headers replace a header of the same name: the invalid traceparent goes.
  settlement.extra_headers.emplace_back("traceparent", child_traceparent());
  if (const auto invalid = transport::find_header(message.headers, "traceparent"))
    settlement.headers_if_absent.emplace_back("x-warren-invalid-traceparent",
                                              std::string(*invalid));
}

}  // namespace warren::runtime
