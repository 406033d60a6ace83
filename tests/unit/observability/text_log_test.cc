// Issue 19 item 12: a text log line ([log] format = "text", the default) embeds message ids,
// trace ids and reasons that come from message content. A newline there forged a whole log line
// and an ANSI/OSC escape acted on the terminal of whoever tails the log; every field and the
// message are written with their control characters escaped, one event on one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "observability/log.h"

namespace warren::observability {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

std::string logged_line(const LogFields& fields, const std::string& text) {
  configure_logging("info", LogFormat::text);
  ::testing::internal::CaptureStderr();
  log(LogLevel::warn, fields, text);
  flush_logs();
  return ::testing::internal::GetCapturedStderr();
}

TEST(TextLogLine, NewlineAndAnsiOscInMessageIdAndText_AreEscapedOnOneLine) {
  const std::string id = "order-7\x1b]0;owned\x07\n2030-01-01T00:00:00.000+0000 info  forged";
  const LogFields fields{"emails", id, 2, "trace\x1b[2J"};

  const std::string line = logged_line(fields,
                                       "will retry: bad header \x1b[31mred\r\nsecond\xC2\x9B"
                                       "1m line");

  EXPECT_EQ(line.find('\n'), line.size() - 1) << "exactly one line: " << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x07'), std::string::npos) << line;
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  EXPECT_THAT(line, Not(HasSubstr("\xC2\x9B")));
  EXPECT_THAT(line, HasSubstr("msg=order-7\\x1b]0;owned\\x07\\n2030-01-01T00:00:00.000+0000 "));
  EXPECT_THAT(line, HasSubstr("trace=trace\\x1b[2J]"));
  EXPECT_THAT(line, EndsWith("bad header \\x1b[31mred\\r\\nsecond\\u009b1m line\n"));
}

TEST(TextLogLine, PrintableUtf8AndBackslashesOfOrdinaryMessages_AreKept) {
  const std::string line = logged_line({}, "caf\xC3\xA9 \xE2\x82\xAC 12 C:\\orders");

  EXPECT_THAT(line, EndsWith("caf\xC3\xA9 \xE2\x82\xAC 12 C:\\orders\n"));
}

}  // namespace
}  // namespace warren::observability
