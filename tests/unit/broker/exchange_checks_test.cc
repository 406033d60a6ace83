// Specification of ExchangeChecks: the default exchange needs no check; publishes to an exchange
// not yet checked wait for one check of it, one check runs at a time; a found exchange releases
// its publishes in order and is known from then on; a missing one hands them back to fail; a
// forgotten one is checked again; parked publishes time out, and a lost connection hands them
// all back and forgets everything.
#include "broker/exchange_checks.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace warren::broker {
namespace {

using Clock = PendingPublish::Clock;
using namespace std::chrono_literals;

const Clock::time_point kStart = Clock::now();

std::shared_ptr<PendingPublish> publish(const std::string& id, const std::string& exchange,
                                        Clock::duration timeout = 10s) {
  transport::OutboundMessage message;
  message.exchange = exchange;
  message.routing_key = "order.placed";
  message.message_id = id;
  return std::make_shared<PendingPublish>(std::move(message), kStart + timeout);
}

std::vector<std::string> ids(const ExchangeChecks::Publishes& publishes) {
  std::vector<std::string> result;
  for (const auto& publish : publishes)
    result.push_back(publish->message().message_id);
  return result;
}

TEST(ExchangeChecks, DefaultExchange_IsKnownWithoutACheck) {
  ExchangeChecks checks;
  EXPECT_TRUE(checks.known(""));
  EXPECT_FALSE(checks.known("orders"));
  EXPECT_FALSE(checks.check_due());
}

TEST(ExchangeChecks, PublishesToUncheckedExchanges_WaitForOneCheckEachOneAtATime) {
  ExchangeChecks checks;
  checks.park(publish("o1", "orders"));
  checks.park(publish("a1", "audit"));
  checks.park(publish("o2", "orders"));
  EXPECT_EQ(checks.parked(), 3U);

  EXPECT_EQ(checks.start_next(), "orders");
  EXPECT_FALSE(checks.check_due()) << "a check runs";
  EXPECT_EQ(checks.start_next(), std::nullopt);
  EXPECT_EQ(ids(checks.found()), (std::vector<std::string>{"o1", "o2"}));
  EXPECT_TRUE(checks.known("orders"));

  EXPECT_EQ(checks.start_next(), "audit");
  EXPECT_EQ(checks.start_next(), std::nullopt);
  EXPECT_EQ(ids(checks.found()), (std::vector<std::string>{"a1"}));
  EXPECT_EQ(checks.start_next(), std::nullopt) << "each exchange is checked once";
}

TEST(ExchangeChecks, MissingExchange_HandsBackItsPublishesAndIsCheckedAgainNextTime) {
  ExchangeChecks checks;
  checks.park(publish("m1", "missing"));
  ASSERT_EQ(checks.start_next(), "missing");
  checks.park(publish("m2", "missing"));  // arrives during the check: answered by it
  EXPECT_EQ(ids(checks.missing()), (std::vector<std::string>{"m1", "m2"}));
  EXPECT_FALSE(checks.known("missing"));
  EXPECT_FALSE(checks.check_due());

  checks.park(publish("m3", "missing"));
  EXPECT_EQ(checks.start_next(), "missing");
}

TEST(ExchangeChecks, ForgottenExchange_IsCheckedBeforeItsNextPublish) {
  ExchangeChecks checks;
  checks.park(publish("o1", "orders"));
  checks.start_next();
  checks.found();
  checks.forget("orders");  // the broker named it in closing the confirm channel
  EXPECT_FALSE(checks.known("orders"));
  checks.park(publish("o2", "orders"));
  EXPECT_EQ(checks.start_next(), "orders");
}

TEST(ExchangeChecks, ParkedPastTheirDeadline_AreTakenOutTheOthersStay) {
  ExchangeChecks checks;
  checks.park(publish("short", "orders", 1s));
  checks.park(publish("long", "orders", 10s));
  EXPECT_EQ(ids(checks.take_expired(kStart + 2s)), (std::vector<std::string>{"short"}));
  EXPECT_EQ(checks.parked(), 1U);
  checks.start_next();
  EXPECT_EQ(ids(checks.found()), (std::vector<std::string>{"long"}));
}

TEST(ExchangeChecks, ConnectionLost_HandsBackEveryParkedPublishAndForgetsWhatWasKnown) {
  ExchangeChecks checks;
  checks.park(publish("o1", "orders"));
  checks.start_next();
  checks.found();
  checks.park(publish("a1", "audit"));
  checks.park(publish("b1", "billing"));
  checks.start_next();

  EXPECT_EQ(checks.reset().size(), 2U);
  EXPECT_EQ(checks.parked(), 0U);
  EXPECT_FALSE(checks.known("orders"));
  EXPECT_FALSE(checks.checking());
  EXPECT_FALSE(checks.check_due());
}

}  // namespace
}  // namespace warren::broker
