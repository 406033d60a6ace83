// host_abi/reported_outcome.h: how every warren_outcome a plugin of ABI 1.0 or 1.1 can send is
// read, once, for the host and the harness.
#include "warren/host_abi/reported_outcome.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "warren/detail/strings.h"

namespace warren::host_abi {
namespace {

using Kind = ReportedOutcome::Kind;

warren_outcome outcome(std::uint32_t kind, std::string_view reason = {},
                       std::uint32_t error_kind = WARREN_ERROR_NONE,
                       std::string_view error_type = {}) {
  warren_outcome raw{};
  raw.struct_size = sizeof raw;
  raw.kind = kind;
  raw.delay_ms = -1;
  raw.reason = detail::to_abi(reason);
  raw.error_kind = error_kind;
  raw.error_type = detail::to_abi(error_type);
  return raw;
}

TEST(ReadOutcome, Ack_IsAnAckThatDidNotThrow) {
  const warren_outcome raw = outcome(WARREN_OUTCOME_ACK);
  const ReportedOutcome read = read_outcome(&raw);
  EXPECT_EQ(read.kind, Kind::ack);
  EXPECT_FALSE(read.threw());
  EXPECT_FALSE(read.delay.has_value());
}

TEST(ReadOutcome, Retry_CarriesItsDelayOrLeavesItToThePolicy) {
  warren_outcome raw = outcome(WARREN_OUTCOME_RETRY);
  EXPECT_FALSE(read_outcome(&raw).delay.has_value());
  raw.delay_ms = 0;
  EXPECT_EQ(read_outcome(&raw).delay, std::chrono::milliseconds(0));
  raw.delay_ms = 250;
  EXPECT_EQ(read_outcome(&raw).delay, std::chrono::milliseconds(250));
  raw.delay_ms = -2;
  const ReportedOutcome negative = read_outcome(&raw);
  EXPECT_EQ(negative.kind, Kind::invalid);
  EXPECT_EQ(negative.reason, "the handler asked for a negative retry delay");
}

TEST(ReadOutcome, ThrownStdException_IsARetryWithItsWhatAndDemangledType) {
  const warren_outcome raw =
      outcome(WARREN_OUTCOME_THREW, "db down", WARREN_ERROR_STD_EXCEPTION, "St13runtime_error");
  const ReportedOutcome read = read_outcome(&raw);
  EXPECT_EQ(read.kind, Kind::retry);
  EXPECT_EQ(read.error, HandlerError::std_exception);
  EXPECT_EQ(read.reason, "db down");
  EXPECT_EQ(read.exception_type, "std::runtime_error");
  EXPECT_FALSE(read.delay.has_value());
}

TEST(ReadOutcome, ThrownWithoutAnErrorKind_CountsAsAnUnknownThrow) {
  const warren_outcome raw = outcome(WARREN_OUTCOME_THREW, "?");
  EXPECT_EQ(read_outcome(&raw).error, HandlerError::unknown);
}

TEST(ReadOutcome, PermanentErrorOfAbi1_0AndOfAbi1_1_ReadTheSame) {
  const warren_outcome v1_0 = outcome(WARREN_OUTCOME_THREW_PERMANENT, "bad json",
                                      WARREN_ERROR_PERMANENT, "N6warren14PermanentErrorE");
  const warren_outcome v1_1 = outcome(WARREN_OUTCOME_DEAD_LETTER, "bad json",
                                      WARREN_ERROR_PERMANENT, "N6warren14PermanentErrorE");
  for (const warren_outcome& raw : {v1_0, v1_1}) {
    const ReportedOutcome read = read_outcome(&raw);
    EXPECT_EQ(read.kind, Kind::dead_letter);
    EXPECT_EQ(read.error, HandlerError::permanent);
    EXPECT_EQ(read.reason, "bad json");
    EXPECT_EQ(read.exception_type, "warren::PermanentError");
  }
}

TEST(ReadOutcome, ReturnedDeadLetter_KeepsItsReasonAndDidNotThrow) {
  const warren_outcome raw = outcome(WARREN_OUTCOME_DEAD_LETTER, "unknown sku");
  const ReportedOutcome read = read_outcome(&raw);
  EXPECT_EQ(read.kind, Kind::dead_letter);
  EXPECT_EQ(read.reason, "unknown sku");
  EXPECT_EQ(read.error, HandlerError::none);
  EXPECT_EQ(read.exception_type, "");
}

TEST(ReadOutcome, BrokenReports_AreInvalidWithAReason) {
  EXPECT_EQ(read_outcome(nullptr).reason, "the plugin reported no outcome (null pointer)");
  warren_outcome raw = outcome(WARREN_OUTCOME_ACK);
  raw.struct_size = 8;
  EXPECT_EQ(read_outcome(&raw).reason,
            "the plugin reported an outcome smaller than Warren ABI 1.0's");
  raw = outcome(0);
  EXPECT_EQ(read_outcome(&raw).kind, Kind::invalid);
  raw = outcome(99);
  EXPECT_EQ(read_outcome(&raw).reason, "the handler returned an invalid outcome (kind 99)");
}

TEST(ReadOutcome, HugeReason_IsCutAtTheLimit) {
  const std::string huge(kMaxReportedText + 10, 'x');
  const warren_outcome raw = outcome(WARREN_OUTCOME_DEAD_LETTER, huge);
  EXPECT_EQ(read_outcome(&raw).reason.size(), kMaxReportedText);
}

TEST(Demangle, ReadableNameOrTheNameItself) {
  EXPECT_EQ(demangle("N6warren14PermanentErrorE"), "warren::PermanentError");
  EXPECT_EQ(demangle("not a mangled name"), "not a mangled name");
  EXPECT_EQ(demangle(""), "");
}

}  // namespace
}  // namespace warren::host_abi
