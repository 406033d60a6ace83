// Specification of W3C trace-context handling.
#include "runtime/trace_context.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string_view>

namespace warren::runtime {
namespace {

constexpr std::string_view kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";

bool is_lower_hex(std::string_view text, std::size_t length) {
  return text.size() == length && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_zero(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == '0'; });
}

// A trace the host started because the message's traceparent was refused: a valid random trace
// id (not the refused one), no parent span, sampled, and no tracestate.
void expect_new_trace_instead_of(const TraceContext& context, std::string_view refused_trace_id) {
  EXPECT_TRUE(is_lower_hex(context.trace_id, 32)) << context.trace_id;
  EXPECT_FALSE(is_zero(context.trace_id));
  EXPECT_TRUE(context.started_here) << "its retries and dead letters must carry it";
  EXPECT_NE(context.trace_id, refused_trace_id);
  EXPECT_EQ(context.parent_id, "");
  EXPECT_EQ(context.flags, "01");
  EXPECT_EQ(context.tracestate, "");
}

// A child traceparent: version 00, the given trace, a fresh valid span id, the given flags.
void expect_child_of(const std::string& child, std::string_view trace_id, std::string_view parent,
                     std::string_view flags) {
  ASSERT_EQ(child.size(), 55u) << child;
  EXPECT_EQ(child.substr(0, 3), "00-");
  EXPECT_EQ(child.substr(3, 32), trace_id);
  EXPECT_EQ(child[35], '-');
  const std::string span = child.substr(36, 16);
  EXPECT_TRUE(is_lower_hex(span, 16)) << child;
  EXPECT_FALSE(is_zero(span)) << child;
  EXPECT_NE(span, parent) << "a new span, not the producer's";
  EXPECT_EQ(child[52], '-');
  EXPECT_EQ(child.substr(53), flags);
}

TEST(TraceContext, ValidTraceparent_IsKeptAndChildSpansShareTheTraceId) {
  const transport::TextHeaders headers{
      {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
      {"tracestate", "vendor=x"}};
  const auto context = TraceContext::from_headers(headers);
  EXPECT_EQ(context.trace_id, kTraceId);
  EXPECT_EQ(context.parent_id, "00f067aa0ba902b7");
  EXPECT_EQ(context.flags, "01");
  EXPECT_EQ(context.tracestate, "vendor=x");
  EXPECT_FALSE(context.started_here);
  expect_child_of(context.child_traceparent(), kTraceId, "00f067aa0ba902b7", "01");
  EXPECT_NE(context.child_traceparent(), context.child_traceparent()) << "a span per publish";
}

TEST(TraceContext, UnsampledFlags_AreKeptInChildren) {
  const auto context = TraceContext::from_headers(
      {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}});
  EXPECT_EQ(context.flags, "00");
  expect_child_of(context.child_traceparent(), kTraceId, "00f067aa0ba902b7", "00");
}

TEST(TraceContext, MissingOrMalformedTraceparent_StartsANewTrace) {
  const auto fresh = TraceContext::from_headers({});
  expect_new_trace_instead_of(fresh, "");
  expect_child_of(fresh.child_traceparent(), fresh.trace_id, "", "01");

  const auto all_zero_trace = TraceContext::from_headers(
      {{"traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}});
  expect_new_trace_instead_of(all_zero_trace, "00000000000000000000000000000000");
  const auto all_zero_span = TraceContext::from_headers(
      {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"}});
  expect_new_trace_instead_of(all_zero_span, kTraceId);
  const auto version_ff = TraceContext::from_headers(
      {{"traceparent", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}});
  expect_new_trace_instead_of(version_ff, kTraceId);
  EXPECT_NE(fresh.trace_id, all_zero_trace.trace_id) << "each new trace is random";
}

TEST(TraceContext, Version00WithTrailingCharacters_IsInvalidAndStartsANewTraceWithoutTracestate) {
  const auto context = TraceContext::from_headers(
      {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"},
       {"tracestate", "vendor=x"}});
  expect_new_trace_instead_of(context, kTraceId);
}

TEST(TraceContext, LaterVersionWithExtraFields_KeepsTheTraceAndChildIsVersion00) {
  const auto context = TraceContext::from_headers(
      {{"traceparent", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next"}});
  EXPECT_EQ(context.trace_id, kTraceId);
  EXPECT_EQ(context.parent_id, "00f067aa0ba902b7");
  expect_child_of(context.child_traceparent(), kTraceId, "00f067aa0ba902b7", "01");

  const auto glued = TraceContext::from_headers(
      {{"traceparent", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"}});
  expect_new_trace_instead_of(glued, kTraceId);  // extra fields follow a '-'
}

TEST(TraceContext, UppercaseHex_IsInvalidAndStartsANewTrace) {
  const auto context = TraceContext::from_headers(
      {{"traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"}});
  expect_new_trace_instead_of(context, kTraceId);
  EXPECT_NE(context.trace_id, "4BF92F3577B34DA6A3CE929D0E0E4736");
}

}  // namespace
}  // namespace warren::runtime
