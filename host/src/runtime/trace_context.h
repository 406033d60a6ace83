// W3C trace context (traceparent/tracestate) for one message: read from the delivery, attached
// to its logs, and propagated with a new span id on every publish made while handling it.
#pragma once

#include <string>

#include "transport/settlement.h"
#include "transport/transport.h"

namespace warren::runtime {

struct TraceContext {
  std::string trace_id;   // 32 hex digits
  std::string parent_id;  // the span id of the message's producer (16 hex), may be empty
  std::string flags = "01";
  std::string tracestate;  // passed on unchanged
  // True when the host started this trace: the message had no traceparent, or an invalid one.
  // Its republished copies (retries, dead letters) must then carry this trace's traceparent, so
  // that one trace id follows the message through every attempt.
  bool started_here = false;

  // From the message's headers; a new trace when it has no valid traceparent.
  static TraceContext from_headers(const transport::TextHeaders& headers);
  // The traceparent of a child span (a publish made while handling this message).
  std::string child_traceparent() const;
  // Makes the retried or dead-lettered copy of `message` carry this trace when the host started
  // it: a valid traceparent replaces a missing or invalid one, and an invalid one is kept as
  // x-warren-invalid-traceparent (for whoever wants to see what came in). A valid one is left as
  // it is.
  void carry_into(const transport::InboundMessage& message,
                  transport::Settlement& settlement) const;
};

}  // namespace warren::runtime
