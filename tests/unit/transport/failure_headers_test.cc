// The x-warren-* headers of retries and dead letters (failure_headers.h).
#include "transport/failure_headers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace warren::transport {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

InboundMessage original() {
  InboundMessage message;
  message.queue = "emails";
  message.exchange = "livraria.eventos";
  message.routing_key = "pedido.registrado";
  message.headers = {{"x-test", "kept"}};
  return message;
}

TEST(RetryHeaders, NextAttemptOriginLastErrorAndTheGeneratedTraceContext) {
  Settlement retry;
  retry.kind = Settlement::Kind::retry_later;
  retry.next_attempt = 2;
  retry.reason = "std::runtime_error: timeout";
  retry.headers_if_absent = {{"traceparent", "tp"}};
  TextHeaders headers = original().headers;
  add_retry_headers(headers, original(), retry, "2026-12-02T03:00:00.000Z");
  EXPECT_THAT(headers, ElementsAre(Pair("x-test", "kept"), Pair("x-warren-attempt", "2"),
                                   Pair("x-warren-original-exchange", "livraria.eventos"),
                                   Pair("x-warren-original-routing-key", "pedido.registrado"),
                                   Pair("x-warren-first-failed-at", "2026-12-02T03:00:00.000Z"),
                                   Pair("traceparent", "tp"),
                                   Pair("x-warren-last-error", "std::runtime_error: timeout")));
}

TEST(RetryHeaders, ASecondRetryKeepsWhereItFirstFailedAndCountsOn) {
  Settlement retry;
  retry.next_attempt = 3;
  TextHeaders headers = {{"x-warren-attempt", "2"}, {"x-warren-first-failed-at", "first"}};
  add_retry_headers(headers, original(), retry, "later");
  EXPECT_EQ(find_header(headers, "x-warren-attempt"), "3");
  EXPECT_EQ(find_header(headers, "x-warren-first-failed-at"), "first");
  EXPECT_FALSE(find_header(headers, "x-warren-last-error").has_value());
  EXPECT_EQ(headers.size(), 4u);
}

TEST(DeadLetterHeaders, EveryReasonFieldOnceEvenWhenTheMessageWasDeadLetteredBefore) {
  Settlement dead;
  dead.kind = Settlement::Kind::dead_letter;
  dead.attempt = 5;
  dead.worker = "emails";
  dead.reason = "ValueError: bad order";
  TextHeaders headers = {{"x-warren-error", "old"}, {"x-warren-worker", "old"}};
  add_dead_letter_headers(headers, original(), dead, "now");
  EXPECT_THAT(headers, ElementsAre(Pair("x-warren-error", "ValueError: bad order"),
                                   Pair("x-warren-worker", "emails"), Pair("x-warren-attempt", "5"),
                                   Pair("x-warren-queue", "emails"),
                                   Pair("x-warren-original-exchange", "livraria.eventos"),
                                   Pair("x-warren-original-routing-key", "pedido.registrado"),
                                   Pair("x-warren-first-failed-at", "now"),
                                   Pair("x-warren-dead-lettered-at", "now")));
}

TEST(DeadLetterHeaders, ExtraHeadersComeLastAndReplaceTheirOldValue) {
  Settlement dead;
  dead.kind = Settlement::Kind::dead_letter;
  dead.extra_headers = {{"x-warren-crashes", "3"}};
  TextHeaders headers = {{"x-warren-crashes", "1"}};
  add_dead_letter_headers(headers, original(), dead, "now");
  EXPECT_EQ(find_header(headers, "x-warren-crashes"), "3");
  EXPECT_EQ(std::count_if(headers.begin(), headers.end(),
                          [](const auto& header) { return header.first == "x-warren-crashes"; }),
            1);
}

TEST(DeadLetterHeaders, ALongReasonIsCutAtAKibibyteBetweenUtf8Characters) {
  Settlement dead;
  dead.reason = std::string(1023, 'a') + "\xC3\xA7" + "tail";  // "ç" straddles byte 1024
  TextHeaders headers;
  add_dead_letter_headers(headers, original(), dead, "now");
  EXPECT_EQ(find_header(headers, "x-warren-error"), std::string(1023, 'a'));
}

TEST(TruncatedUtf8, ShortTextIsKeptWhole) {
  EXPECT_EQ(truncated_utf8("abc", 3), "abc");
  EXPECT_EQ(truncated_utf8("abcd", 3), "abc");
}

}  // namespace
}  // namespace warren::transport
