// Specification of the ConfirmTracker: each publish gets the broker's sequence number, a
// basic.ack or basic.nack settles one publish or (multiple) every one up to its tag, in any order;
// a basic.return makes the following confirm a `returned`; a publish past its deadline times out
// once and its late confirm answers nothing; a channel the broker closes over one publish refuses
// that one, leaves those it read unconfirmed in doubt and hands back those it never read; a lost
// connection fails everything still unanswered.
#include "broker/confirm_tracker.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace warren::broker {
namespace {

using Result = PendingPublish::Result;
using Clock = PendingPublish::Clock;
using namespace std::chrono_literals;

const Clock::time_point kStart = Clock::now();

std::shared_ptr<PendingPublish> publish(const std::string& id, Clock::duration timeout = 10s,
                                        const std::string& exchange = "orders") {
  transport::OutboundMessage message;
  message.exchange = exchange;
  message.routing_key = "order.placed";
  message.message_id = id;
  return std::make_shared<PendingPublish>(std::move(message), kStart + timeout);
}

// The message id of each verdict -> its result.
std::map<std::string, Result> by_id(const std::vector<ConfirmTracker::Verdict>& verdicts) {
  std::map<std::string, Result> results;
  for (const auto& verdict : verdicts)
    results[verdict.publish->message().message_id] = verdict.result;
  return results;
}

// Sends publishes "m1".."mN" and returns their sequence numbers.
std::vector<std::uint64_t> send(ConfirmTracker& tracker, int count) {
  std::vector<std::uint64_t> sequences;
  for (int i = 1; i <= count; ++i)
    sequences.push_back(tracker.sent(publish("m" + std::to_string(i))));
  return sequences;
}

TEST(ConfirmTracker, SequenceNumbers_StartAtOneAndStartAgainOnANewChannel) {
  ConfirmTracker tracker;
  EXPECT_EQ(send(tracker, 3), (std::vector<std::uint64_t>{1, 2, 3}));
  tracker.fail_all(Result::unavailable, "");
  tracker.restart();
  EXPECT_EQ(tracker.sent(publish("again")), 1U);
}

TEST(ConfirmTracker, SingleAck_ConfirmsThatPublishOnly) {
  ConfirmTracker tracker;
  send(tracker, 3);
  const auto verdicts = tracker.acked(2, false);
  EXPECT_EQ(by_id(verdicts), (std::map<std::string, Result>{{"m2", Result::confirmed}}));
  EXPECT_EQ(tracker.tracked(), 2U);
}

TEST(ConfirmTracker, MultipleAck_ConfirmsEveryPublishUpToItsTag) {
  ConfirmTracker tracker;
  send(tracker, 5);
  const auto verdicts = tracker.acked(3, true);
  EXPECT_EQ(by_id(verdicts),
            (std::map<std::string, Result>{
                {"m1", Result::confirmed}, {"m2", Result::confirmed}, {"m3", Result::confirmed}}));
  EXPECT_EQ(tracker.tracked(), 2U);
}

TEST(ConfirmTracker, OutOfOrderAcks_EachSettlesItsOwnAndAMultipleOneTheRest) {
  ConfirmTracker tracker;
  send(tracker, 4);
  EXPECT_EQ(by_id(tracker.acked(3, false)),
            (std::map<std::string, Result>{{"m3", Result::confirmed}}));
  EXPECT_EQ(by_id(tracker.acked(1, false)),
            (std::map<std::string, Result>{{"m1", Result::confirmed}}));
  EXPECT_EQ(by_id(tracker.acked(4, true)),
            (std::map<std::string, Result>{{"m2", Result::confirmed}, {"m4", Result::confirmed}}));
  EXPECT_EQ(tracker.tracked(), 0U);
}

TEST(ConfirmTracker, NackInTheMiddleOfAWindow_FailsOnlyThatPublish) {
  ConfirmTracker tracker;
  send(tracker, 5);
  const auto nacked = tracker.nacked(3, false);
  ASSERT_EQ(nacked.size(), 1U);
  EXPECT_EQ(nacked[0].publish->message().message_id, "m3");
  EXPECT_EQ(nacked[0].result, Result::nacked);
  EXPECT_EQ(nacked[0].detail, " by the broker (basic.nack)");
  EXPECT_EQ(by_id(tracker.acked(5, true)),
            (std::map<std::string, Result>{{"m1", Result::confirmed},
                                           {"m2", Result::confirmed},
                                           {"m4", Result::confirmed},
                                           {"m5", Result::confirmed}}));
}

TEST(ConfirmTracker, MultipleNack_FailsEveryPublishUpToItsTag) {
  ConfirmTracker tracker;
  send(tracker, 3);
  EXPECT_EQ(by_id(tracker.nacked(2, true)),
            (std::map<std::string, Result>{{"m1", Result::nacked}, {"m2", Result::nacked}}));
  EXPECT_EQ(tracker.tracked(), 1U);
}

TEST(ConfirmTracker, ConfirmOfNoTrackedPublish_AnswersNothing) {
  ConfirmTracker tracker;
  send(tracker, 2);
  EXPECT_TRUE(tracker.acked(7, false).empty());
  EXPECT_TRUE(tracker.acked(1, false).size() == 1);
  EXPECT_TRUE(tracker.acked(1, false).empty());  // twice
  EXPECT_EQ(tracker.tracked(), 1U);
}

TEST(ConfirmTracker, ReturnThenAck_IsReturnedWithTheBrokersText) {
  ConfirmTracker tracker;
  send(tracker, 2);
  tracker.returned("m2", "orders", "order.placed", "312 NO_ROUTE (exchange 'orders')");
  const auto verdicts = tracker.acked(2, true);
  EXPECT_EQ(by_id(verdicts),
            (std::map<std::string, Result>{{"m1", Result::confirmed}, {"m2", Result::returned}}));
  ASSERT_EQ(verdicts.size(), 2U);
  EXPECT_EQ(verdicts[1].detail, ": 312 NO_ROUTE (exchange 'orders')");
}

TEST(ConfirmTracker, ReturnThenNack_IsNacked) {
  ConfirmTracker tracker;
  send(tracker, 1);
  tracker.returned("m1", "orders", "order.placed", "312 NO_ROUTE");
  EXPECT_EQ(by_id(tracker.nacked(1, false)),
            (std::map<std::string, Result>{{"m1", Result::nacked}}));
}

TEST(ConfirmTracker, TwoPublishesOfOneMessage_EachReturnMarksTheOldestUnmarked) {
  ConfirmTracker tracker;
  tracker.sent(publish("same"));  // 1
  tracker.sent(publish("same"));  // 2
  tracker.sent(publish("same"));  // 3
  tracker.returned("same", "orders", "order.placed", "first");
  tracker.returned("same", "orders", "order.placed", "second");
  const auto verdicts = tracker.acked(3, true);
  ASSERT_EQ(verdicts.size(), 3U);
  EXPECT_EQ(verdicts[0].result, Result::returned);
  EXPECT_EQ(verdicts[0].detail, ": first");
  EXPECT_EQ(verdicts[1].result, Result::returned);
  EXPECT_EQ(verdicts[1].detail, ": second");
  EXPECT_EQ(verdicts[2].result, Result::confirmed);
}

TEST(ConfirmTracker, ReturnOfAnotherExchangeOrKey_MarksNothing) {
  ConfirmTracker tracker;
  send(tracker, 1);
  tracker.returned("m1", "elsewhere", "order.placed", "312 NO_ROUTE");
  tracker.returned("m1", "orders", "other.key", "312 NO_ROUTE");
  EXPECT_EQ(by_id(tracker.acked(1, false)),
            (std::map<std::string, Result>{{"m1", Result::confirmed}}));
}

TEST(ConfirmTracker, Deadlines_TimeOutOnceAndTheLateConfirmAnswersNothing) {
  ConfirmTracker tracker;
  tracker.sent(publish("quick", 1s));
  tracker.sent(publish("slow", 30s));
  EXPECT_TRUE(tracker.expire(kStart, "").empty());
  const auto expired = tracker.expire(kStart + 2s, " (blocked)");
  ASSERT_EQ(expired.size(), 1U);
  EXPECT_EQ(expired[0].publish->message().message_id, "quick");
  EXPECT_EQ(expired[0].result, Result::timeout);
  EXPECT_EQ(expired[0].detail, " (blocked)");
  EXPECT_TRUE(tracker.expire(kStart + 3s, "").empty());  // not twice
  EXPECT_EQ(tracker.tracked(), 2U);  // kept until its confirm, which it must not steal

  EXPECT_EQ(by_id(tracker.acked(2, true)),
            (std::map<std::string, Result>{{"slow", Result::confirmed}}));
  EXPECT_EQ(tracker.tracked(), 0U);
}

// The results of the publishes a channel.close settles, by message id.
std::map<std::string, Result> verdicts_of(const ConfirmTracker::ChannelLoss& loss) {
  return by_id(loss.verdicts);
}

// The message ids of the publishes handed back to be sent again, in order.
std::vector<std::string> unsent_of(const ConfirmTracker::ChannelLoss& loss) {
  std::vector<std::string> ids;
  for (const auto& publish : loss.unsent)
    ids.push_back(publish->message().message_id);
  return ids;
}

TEST(ConfirmTracker, ChannelClosedOverAPublish_ItIsRefusedEarlierOnesInDoubtLaterOnesSentAgain) {
  ConfirmTracker tracker;
  tracker.sent(publish("confirmed", 10s, "orders"));
  tracker.sent(publish("read", 10s, "orders"));
  tracker.sent(publish("culprit", 10s, "missing"));
  tracker.sent(publish("unread-1", 10s, "orders"));
  tracker.sent(publish("unread-2", 10s, "audit"));
  tracker.acked(1, false);

  const auto loss =
      tracker.channel_closed("missing", ": NOT_FOUND - no exchange 'missing'", ": in doubt");
  EXPECT_EQ(verdicts_of(loss), (std::map<std::string, Result>{{"read", Result::unavailable},
                                                              {"culprit", Result::nacked}}));
  for (const auto& verdict : loss.verdicts) {
    EXPECT_EQ(verdict.detail, verdict.result == Result::nacked
                                  ? ": NOT_FOUND - no exchange 'missing'"
                                  : ": in doubt");
  }
  EXPECT_EQ(unsent_of(loss), (std::vector<std::string>{"unread-1", "unread-2"}));
  EXPECT_EQ(tracker.tracked(), 0U);
  EXPECT_EQ(tracker.next_sequence(), 1U) << "the reopened channel numbers from 1 again";
}

TEST(ConfirmTracker, ChannelClosedWithSeveralToThatExchange_OnlyTheLastIsSurelyNotPublished) {
  // The first of them may have been routed before the exchange went: all but the last are in
  // doubt, as is everything sent before the last.
  ConfirmTracker tracker;
  tracker.sent(publish("to-gone-1", 10s, "gone"));
  tracker.sent(publish("between", 10s, "orders"));
  tracker.sent(publish("to-gone-2", 10s, "gone"));
  tracker.sent(publish("after", 10s, "orders"));

  const auto loss = tracker.channel_closed("gone", ": refused", ": in doubt");
  EXPECT_EQ(verdicts_of(loss), (std::map<std::string, Result>{{"to-gone-1", Result::unavailable},
                                                              {"between", Result::unavailable},
                                                              {"to-gone-2", Result::nacked}}));
  EXPECT_EQ(unsent_of(loss), (std::vector<std::string>{"after"}));
}

TEST(ConfirmTracker, ChannelClosedNamingNothingInFlight_EveryUnconfirmedPublishIsInDoubt) {
  ConfirmTracker tracker;
  tracker.sent(publish("a", 10s, "orders"));
  tracker.sent(publish("b", 10s, "audit"));

  for (const auto& culprit : {std::optional<std::string>{}, std::optional<std::string>{"other"}}) {
    ConfirmTracker copy = tracker;
    const auto loss = copy.channel_closed(culprit, ": refused", ": in doubt");
    EXPECT_EQ(verdicts_of(loss), (std::map<std::string, Result>{{"a", Result::unavailable},
                                                                {"b", Result::unavailable}}));
    EXPECT_TRUE(loss.unsent.empty());
  }
}

TEST(ConfirmTracker, ChannelClosed_AReturnedPublishStaysReturnedATimedOutOneIsNotSentAgain) {
  ConfirmTracker tracker;
  tracker.sent(publish("returned", 10s, "orders"));
  tracker.sent(publish("culprit", 10s, "missing"));
  tracker.sent(publish("timed-out", 1s, "orders"));
  tracker.returned("returned", "orders", "order.placed", "312 NO_ROUTE");
  ASSERT_EQ(by_id(tracker.expire(kStart + 2s, "")),
            (std::map<std::string, Result>{{"timed-out", Result::timeout}}));

  const auto loss = tracker.channel_closed("missing", ": refused", ": in doubt");
  EXPECT_EQ(verdicts_of(loss), (std::map<std::string, Result>{{"returned", Result::returned},
                                                              {"culprit", Result::nacked}}));
  EXPECT_TRUE(loss.unsent.empty()) << "its caller already has an answer";
}

TEST(ConfirmTracker, ReconnectInTheMiddle_FailsEveryUnansweredPublishOnce) {
  ConfirmTracker tracker;
  tracker.sent(publish("confirmed"));
  tracker.sent(publish("timed-out", 1s));
  tracker.sent(publish("waiting"));
  tracker.acked(1, false);
  tracker.expire(kStart + 2s, "");
  const auto failed = tracker.fail_all(Result::unavailable, ": connection lost");
  EXPECT_EQ(by_id(failed), (std::map<std::string, Result>{{"waiting", Result::unavailable}}));
  EXPECT_EQ(failed[0].detail, ": connection lost");
  EXPECT_EQ(tracker.tracked(), 0U);

  // The new channel: its confirms start at 1 again and settle only its own publishes.
  tracker.restart();
  tracker.sent(publish("new"));
  EXPECT_EQ(by_id(tracker.acked(1, true)),
            (std::map<std::string, Result>{{"new", Result::confirmed}}));
}

}  // namespace
}  // namespace warren::broker
