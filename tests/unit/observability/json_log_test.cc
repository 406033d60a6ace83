// Specification of the JSON log line ([log] format = "json"): one valid JSON object per line,
// whatever the message holds, with the message fields present only when set.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "observability/log.h"

namespace warren::observability {
namespace {

nlohmann::json parse_line(const std::string& line) {
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one event, one line: " << line;
  return nlohmann::json::parse(line);  // throws on invalid JSON (and invalid UTF-8)
}

TEST(JsonLogLine, CarriesTimeLevelAndMessage) {
  const auto line = parse_line(render_json_line(LogLevel::warn, {}, "broker blocked"));

  EXPECT_EQ(line.at("level"), "warn");
  EXPECT_EQ(line.at("message"), "broker blocked");
  EXPECT_TRUE(std::regex_match(line.at("time").get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << line.at("time");
}

TEST(JsonLogLine, QuotesBackslashesNewlinesAndControlCharacters_RoundTrip) {
  const std::string text = "handler said \"no\"\nat C:\\orders\ttab \x01 end";

  const auto line = parse_line(render_json_line(LogLevel::error, {}, text));

  EXPECT_EQ(line.at("message"), text);
}

TEST(JsonLogLine, InvalidUtf8_IsReplacedAndValidUtf8Kept) {
  const std::string text = "caf\xC3\xA9 \xFF\xFE broken \xE2\x82";

  const auto line = parse_line(render_json_line(LogLevel::info, {}, text));

  EXPECT_EQ(line.at("message"),
            "caf\xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD broken \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(JsonLogLine, NoFieldsSet_NoFieldKeys) {
  const auto line = parse_line(render_json_line(LogLevel::info, {}, "host started"));

  for (const char* key : {"worker", "message_id", "attempt", "trace_id"})
    EXPECT_FALSE(line.contains(key)) << key;
}

TEST(JsonLogLine, EveryFieldSet_AllPresentWithTheirValues) {
  const LogFields fields{"orders", "msg-42", 3, "4bf92f3577b34da6a3ce929d0e0e4736"};

  const auto line = parse_line(render_json_line(LogLevel::error, fields, "handler failed"));

  EXPECT_EQ(line.at("worker"), "orders");
  EXPECT_EQ(line.at("message_id"), "msg-42");
  EXPECT_EQ(line.at("attempt"), 3) << "a number, not a string";
  EXPECT_EQ(line.at("trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736");
}

TEST(JsonLogLine, WorkerOnly_OnlyWorkerPresent) {
  const auto line =
      parse_line(render_json_line(LogLevel::info, LogFields::for_worker("orders"), "subscribed"));

  EXPECT_EQ(line.at("worker"), "orders");
  EXPECT_FALSE(line.contains("message_id"));
  EXPECT_FALSE(line.contains("attempt"));
  EXPECT_FALSE(line.contains("trace_id"));
}

TEST(JsonLogLine, FieldValuesAreEscapedToo) {
  const LogFields fields{"ord\"ers", "id\nwith newline", 1, "\xFF"};

  const auto line = parse_line(render_json_line(LogLevel::info, fields, "x"));

  EXPECT_EQ(line.at("worker"), "ord\"ers");
  EXPECT_EQ(line.at("message_id"), "id\nwith newline");
  EXPECT_EQ(line.at("trace_id"), "\xEF\xBF\xBD");
}

// Issue 19 item 12: JSON lines are read on terminals too (journalctl, tail): no escape sequence,
// DEL or C1 control (U+009B is a one-character CSI) is written raw; the value still round-trips.
TEST(JsonLogLine, AnsiOscDelAndC1Controls_AreWrittenAsUnicodeEscapes) {
  const std::string text =
      "id \x1b]0;owned\x07 \x7f \xC2\x9B"
      "31m red";

  const std::string raw = render_json_line(LogLevel::info, {"w", text, 1, {}}, text);

  for (const char* control : {"\x1b", "\x07", "\x7f", "\xC2\x9B"})
    EXPECT_EQ(raw.find(control), std::string::npos) << raw;
  const auto line = parse_line(raw);
  EXPECT_EQ(line.at("message"), text);
  EXPECT_EQ(line.at("message_id"), text);
}

}  // namespace
}  // namespace warren::observability
