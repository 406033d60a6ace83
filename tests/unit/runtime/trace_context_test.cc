// Specification of W3C trace-context handling.
#include "runtime/trace_context.h"

#include <gtest/gtest.h>

namespace warren::runtime {
namespace {

TEST(TraceContext, ValidTraceparent_IsKeptAndChildSpansShareTheTraceId) {
  const TextHeaders headers{
      {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
      {"tracestate", "vendor=x"}};
  const auto context = TraceContext::from_headers(headers);
  EXPECT_EQ(context.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(context.parent_id, "00f067aa0ba902b7");
  EXPECT_EQ(context.tracestate, "vendor=x");
  const std::string child = context.child_traceparent();
  EXPECT_EQ(child.substr(0, 36), "00-4bf92f3577b34da6a3ce929d0e0e4736-");
  EXPECT_NE(child.substr(36, 16), "00f067aa0ba902b7");
  EXPECT_EQ(child.size(), 55u);
}

TEST(TraceContext, MissingOrMalformedTraceparent_StartsANewTrace) {
  const auto fresh = TraceContext::from_headers({});
  EXPECT_EQ(fresh.trace_id.size(), 32u);
  const auto malformed = TraceContext::from_headers(
      {{"traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}});
  EXPECT_NE(malformed.trace_id, "00000000000000000000000000000000");
  EXPECT_NE(fresh.trace_id, malformed.trace_id);
}

TEST(TraceContext, Version00WithTrailingCharacters_IsInvalidAndStartsANewTraceWithoutTracestate) {
  const auto context = TraceContext::from_headers(
      {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"},
       {"tracestate", "vendor=x"}});
  EXPECT_NE(context.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(context.trace_id.size(), 32u);
  EXPECT_TRUE(context.parent_id.empty());
  EXPECT_TRUE(context.tracestate.empty()) << "tracestate is ignored with an invalid traceparent";
}

TEST(TraceContext, LaterVersionWithExtraFields_KeepsTheTraceAndChildIsVersion00) {
  const auto context = TraceContext::from_headers(
      {{"traceparent", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next"}});
  EXPECT_EQ(context.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(context.parent_id, "00f067aa0ba902b7");
  EXPECT_EQ(context.child_traceparent().substr(0, 36), "00-4bf92f3577b34da6a3ce929d0e0e4736-");

  const auto glued = TraceContext::from_headers(
      {{"traceparent", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"}});
  EXPECT_NE(glued.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736") << "extra fields follow a '-'";
}

TEST(TraceContext, UppercaseHex_IsInvalidAndStartsANewTrace) {
  const auto context = TraceContext::from_headers(
      {{"traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"}});
  EXPECT_NE(context.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_NE(context.trace_id, "4BF92F3577B34DA6A3CE929D0E0E4736");
}

}  // namespace
}  // namespace warren::runtime
