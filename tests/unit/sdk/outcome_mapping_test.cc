// How what a handler returns or throws becomes what the host does with the message: the same
// trampolines as production, so these are the rules plugin authors rely on.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>

#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

// Does what the message body says: "ack", "retry", "retry:250", "dead_letter:why", "throw",
// "permanent", "publish_error", "int".
class BodyDriven final : public warren::Handler {
 public:
  explicit BodyDriven(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context&) override {
    const std::string body(msg.body());
    if (body == "ack")
      return warren::Outcome::ack();
    if (body == "retry")
      return warren::Outcome::retry();
    if (body == "retry:250")
      return warren::Outcome::retry(std::chrono::milliseconds(250));
    if (body.starts_with("dead_letter:"))
      return warren::Outcome::dead_letter(body.substr(12));
    if (body == "throw")
      throw std::runtime_error("database unavailable");
    if (body == "permanent")
      throw warren::PermanentError("price is negative");
    if (body == "publish_error")
      throw warren::PublishError("nacked");
    if (body == "int")
      throw 42;
    return warren::Outcome::ack();
  }
};

Result deliver_body(std::string body) {
  Harness harness = Harness::of<BodyDriven>();
  TestMessage message;
  message.body = std::move(body);
  message.message_id = "m-1";
  return harness.deliver(message);
}

TEST(OutcomeMapping, Ack_IsAckedWithoutError) {
  const Result r = deliver_body("ack");
  EXPECT_EQ(r.kind, Result::Kind::ack) << r;
  EXPECT_FALSE(r.threw);
  EXPECT_EQ(r.error, Result::Error::none);
  EXPECT_FALSE(r.delay.has_value());
}

TEST(OutcomeMapping, Retry_IsRetriedUnderTheWorkersPolicy) {
  const Result r = deliver_body("retry");
  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  EXPECT_FALSE(r.delay.has_value()) << "no delay means the worker's retry policy decides";
  EXPECT_FALSE(r.threw);
}

TEST(OutcomeMapping, RetryWithDelay_CarriesTheDelayAskedFor) {
  const Result r = deliver_body("retry:250");
  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  ASSERT_TRUE(r.delay.has_value());
  EXPECT_EQ(*r.delay, std::chrono::milliseconds(250));
}

TEST(OutcomeMapping, DeadLetter_CarriesTheReason) {
  const Result r = deliver_body("dead_letter:unknown product 7");
  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_EQ(r.reason, "unknown product 7");
  EXPECT_FALSE(r.threw);
}

TEST(OutcomeMapping, StdException_IsRetriedWithWhatAsReason) {
  const Result r = deliver_body("throw");
  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  EXPECT_TRUE(r.threw);
  EXPECT_EQ(r.error, Result::Error::std_exception);
  EXPECT_EQ(r.reason, "database unavailable");
  EXPECT_EQ(r.exception_type, "std::runtime_error");
  EXPECT_FALSE(r.delay.has_value());
}

TEST(OutcomeMapping, PermanentError_IsDeadLetteredAtOnceWithWhatAsReason) {
  const Result r = deliver_body("permanent");
  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_TRUE(r.threw);
  EXPECT_EQ(r.error, Result::Error::permanent);
  EXPECT_EQ(r.reason, "price is negative");
  EXPECT_EQ(r.exception_type, "warren::PermanentError");
}

TEST(OutcomeMapping, UncaughtPublishError_IsRetriedLikeAnyStdException) {
  const Result r = deliver_body("publish_error");
  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  EXPECT_EQ(r.error, Result::Error::std_exception);
  EXPECT_EQ(r.exception_type, "warren::PublishError");
}

TEST(OutcomeMapping, NonStdException_IsRetriedAsAnUnknownError) {
  const Result r = deliver_body("int");
  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  EXPECT_TRUE(r.threw);
  EXPECT_EQ(r.error, Result::Error::unknown);
  EXPECT_EQ(r.reason, "a non-std exception was thrown");
  EXPECT_TRUE(r.exception_type.empty());
}

TEST(OutcomeMapping, ResultPrintsReadablyInTestFailures) {
  std::ostringstream printed;
  printed << deliver_body("permanent");
  EXPECT_EQ(printed.str(), "dead_letter (threw warren::PermanentError: price is negative)");
}

}  // namespace
