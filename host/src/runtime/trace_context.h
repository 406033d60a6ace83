// W3C trace context (traceparent/tracestate) for one message: read from the delivery, attached
// to its logs, and propagated with a new span id on every publish made while handling it.
#pragma once

#include <string>

#include "runtime/transport.h"

namespace warren::runtime {

struct TraceContext {
  std::string trace_id;   // 32 hex digits
  std::string parent_id;  // the span id of the message's producer (16 hex), may be empty
  std::string flags = "01";
  std::string tracestate;  // passed on unchanged

  // From the message's headers; a new trace when it has no valid traceparent.
  static TraceContext from_headers(const TextHeaders& headers);
  // The traceparent of a child span (a publish made while handling this message).
  std::string child_traceparent() const;
};

}  // namespace warren::runtime
