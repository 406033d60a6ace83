// Fuzz target: W3C traceparent/tracestate as a delivery brings them (runtime/trace_context.h).
// A valid traceparent is taken as it is; anything else starts a new trace. Either way the
// traceparent of a child span, and the one a retried or dead-lettered copy carries, must be a
// valid version-00 traceparent of the same trace, which the next delivery reads back.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_headers.h"
#include "fuzz_support.h"
#include "runtime/trace_context.h"

namespace {

using warren::fuzz::require;

// The context the next hop reads from `traceparent`: must continue the trace `trace_id`.
void require_continues(const std::string& traceparent, const warren::runtime::TraceContext& from) {
  require(traceparent.size() == 55 && traceparent.starts_with("00-"));
  const auto next = warren::runtime::TraceContext::from_headers({{"traceparent", traceparent}});
  require(!next.started_here);
  require(next.trace_id == from.trace_id && next.flags == from.flags);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  using namespace warren;

  transport::InboundMessage message;
  if (input.ConsumeBool())
    message.headers = fuzz::text_headers(input, 4);
  message.headers.emplace_back("traceparent", input.ConsumeRandomLengthString(80));
  message.headers.emplace_back("tracestate", input.ConsumeRemainingBytesAsString());

  const auto context = runtime::TraceContext::from_headers(message.headers);
  require(context.trace_id.size() == 32 && context.flags.size() == 2);
  require(context.started_here || context.parent_id.size() == 16);
  require_continues(context.child_traceparent(), context);

  for (const auto kind :
       {transport::Settlement::Kind::retry_later, transport::Settlement::Kind::dead_letter}) {
    transport::Settlement settlement;
    settlement.kind = kind;
    context.carry_into(message, settlement);
    if (!context.started_here) {
      require(settlement.extra_headers.empty());  // a valid trace travels as it came
      continue;
    }
    const auto carried = transport::find_header(settlement.extra_headers, "traceparent");
    require(carried.has_value());
    require_continues(std::string(*carried), context);
  }
  return 0;
}
