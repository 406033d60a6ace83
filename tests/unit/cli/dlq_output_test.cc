// Issue 19 item 12: `warren dlq peek|list|replay` print what a message carries (ids, headers,
// x-warren-error, routing keys), which anyone who can publish controls. Printed raw, an ANSI or
// OSC escape rewrites the operator's terminal (title, colours, clearing the screen) and a newline
// forges a line of output. Every such value is printed with its control characters escaped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "cli/dlq_verbs.h"

namespace warren::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// An OSC (set the window title, ended by BEL), a CSI (clear the screen), a newline that starts a
// forged line, and the one-byte C1 CSI (U+009B) that some terminals obey.
const std::string kOsc = "\x1b]0;owned\x07";
const std::string kClear = "\x1b[2J";
const std::string kForged = "\nx-warren-worker: someone-else";
const std::string kC1Csi =
    "\xC2\x9B"
    "31m";

class OneLetter final : public transport::DeadLetters {
 public:
  OneLetter() {
    transport::DeadLetter letter;
    letter.handle = 1;
    letter.message.message_id = "order-1" + kClear;
    letter.message.content_type = "text/plain" + kOsc;
    letter.message.body = "body" + kClear;
    letter.message.headers = {{"x-warren-worker", "w"},
                              {"x-note" + kClear, "title" + kOsc + kForged},
                              {"x-colour", "red" + kC1Csi}};
    letter.error = "boom" + kForged + kOsc;
    letter.original_exchange = "orders" + kClear;
    letter.original_routing_key = "order.created" + kForged;
    letters_.push_back(letter);
  }
  const std::string& queue() const override { return queue_; }
  std::string census() const override { return "1 message(s) in the queue"; }
  std::optional<transport::DeadLetter> next() override {
    if (read_ >= letters_.size())
      return std::nullopt;
    return letters_[read_++];
  }
  void keep(const transport::DeadLetter&) override {}
  bool replays_into_worker_queue_only() const override { return true; }
  bool replay(const transport::DeadLetter&, const transport::OutboundMessage&) override {
    return true;
  }
  std::size_t remove(const std::vector<transport::DeadLetter>& letters) override {
    return letters.size();
  }

 private:
  std::string queue_ = "q.dlq";
  std::vector<transport::DeadLetter> letters_;
  std::size_t read_ = 0;
};

std::string output_of(const std::string& verb) {
  OneLetter letters;
  config::WorkerConfig worker;
  worker.name = "w";
  worker.queue = "q";
  DlqOptions options;
  options.verb = verb;
  options.worker = "w";
  ::testing::internal::CaptureStdout();
  const int code = run_dlq_verb(letters, &worker, options);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0) << out;
  return out;
}

// No byte a terminal acts on except the line ends the command writes itself.
bool has_terminal_controls(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte < 0x20 && byte != '\n') || byte == 0x7f)
      return true;
    if (byte == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F)
      return true;
  }
  return false;
}

TEST(DlqOutput, Peek_EscapesAnsiOscC1AndNewlinesInIdsHeadersErrorAndRoutingKey) {
  const std::string out = output_of("peek");

  EXPECT_FALSE(has_terminal_controls(out)) << out;
  EXPECT_THAT(out, Not(HasSubstr("\nx-warren-worker: someone-else"))) << "a forged line";
  EXPECT_THAT(out, HasSubstr("title\\x1b]0;owned\\x07\\nx-warren-worker: someone-else"));
  EXPECT_THAT(out, HasSubstr("x-note\\x1b[2J: "));
  EXPECT_THAT(out, HasSubstr("red\\u009b31m"));
  EXPECT_THAT(out, HasSubstr("message order-1\\x1b[2J\n"));
  EXPECT_THAT(out, HasSubstr("error: boom\\nx-warren-worker: someone-else\\x1b]0;owned\\x07\n"));
}

TEST(DlqOutput, List_EscapesTheErrorAndTheOriginalRoutingKey) {
  const std::string out = output_of("list");

  EXPECT_FALSE(has_terminal_controls(out)) << out;
  EXPECT_THAT(out, HasSubstr("orders\\x1b[2J / order.created\\nx-warren-worker: someone-else"));
}

TEST(DlqOutput, Replay_EscapesTheMessageIdAndDestination) {
  const std::string out = output_of("replay");

  EXPECT_FALSE(has_terminal_controls(out)) << out;
  EXPECT_THAT(out, HasSubstr("moved order-1\\x1b[2J -> orders\\x1b[2J / "));
}

}  // namespace
}  // namespace warren::cli
