// Specification of the AckLedger: acks are held and coalesced into one `multiple` ack that never
// covers an unsettled delivery, whatever the order of settlements; requeues and rejects go out at
// once; a settlement for an older channel incarnation is stale (never sent on the new channel),
// per channel or for the whole connection.
#include "broker/ack_ledger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace warren::broker {
namespace {

using Verdict = AckLedger::Verdict;

// Delivers tags first..last on `channel`; their tokens by tag.
std::map<std::uint64_t, DeliveryToken> deliver(AckLedger& ledger, std::size_t channel,
                                               std::uint64_t first, std::uint64_t last) {
  std::map<std::uint64_t, DeliveryToken> tokens;
  for (std::uint64_t tag = first; tag <= last; ++tag)
    tokens[tag] = ledger.delivered(channel, tag);
  return tokens;
}

TEST(AckLedger, AckedInOrder_OneMultipleAckUpToTheLast) {
  AckLedger ledger(1);
  auto tokens = deliver(ledger, 0, 1, 5);
  for (std::uint64_t tag = 1; tag <= 5; ++tag)
    EXPECT_EQ(ledger.settle(tokens[tag], SettleAction::ack), Verdict::held);
  ASSERT_TRUE(ledger.has_held_acks(0));
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_EQ(plan.multiple_up_to, 5U);
  EXPECT_TRUE(plan.singles.empty());
  EXPECT_EQ(ledger.outstanding(0), 0U);
  EXPECT_FALSE(ledger.has_held_acks(0));
}

TEST(AckLedger, OutOfOrderSettles_CoalesceOnlyBelowTheOldestUnsettled) {
  AckLedger ledger(1);
  auto tokens = deliver(ledger, 0, 1, 6);
  for (std::uint64_t tag : {5, 2, 1, 3})
    ledger.settle(tokens[tag], SettleAction::ack);
  // 4 and 6 still run: the multiple ack stops at 3, and 5 goes alone.
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_EQ(plan.multiple_up_to, 3U);
  EXPECT_EQ(plan.singles, std::vector<std::uint64_t>{5});
  EXPECT_EQ(ledger.outstanding(0), 2U);

  // The later batch settles them: 6 below no unsettled delivery now, 4 with it.
  ledger.settle(tokens[6], SettleAction::ack);
  ledger.settle(tokens[4], SettleAction::ack);
  const AckPlan rest = ledger.take_acks(0);
  EXPECT_EQ(rest.multiple_up_to, 6U);
  EXPECT_TRUE(rest.singles.empty());
}

TEST(AckLedger, OldestDeliveryStillRunning_EveryAckGoesAlone) {
  AckLedger ledger(1);
  auto tokens = deliver(ledger, 0, 1, 3);
  ledger.settle(tokens[3], SettleAction::ack);
  ledger.settle(tokens[2], SettleAction::ack);
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_EQ(plan.singles, (std::vector<std::uint64_t>{2, 3}));
}

TEST(AckLedger, NackInTheMiddleOfAWindow_IsSentAtOnceAndTheAcksAroundItStillCoalesce) {
  AckLedger ledger(1);
  auto tokens = deliver(ledger, 0, 1, 5);
  ledger.settle(tokens[1], SettleAction::ack);
  ledger.settle(tokens[2], SettleAction::ack);
  EXPECT_EQ(ledger.settle(tokens[3], SettleAction::requeue), Verdict::send_now);
  ledger.settle(tokens[4], SettleAction::ack);
  ledger.settle(tokens[5], SettleAction::ack);
  // basic.nack(3) went out before: the multiple ack spanning 3 acks only 1, 2, 4 and 5.
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_EQ(plan.multiple_up_to, 5U);
  EXPECT_TRUE(plan.singles.empty());
}

TEST(AckLedger, RejectWhileAnEarlierDeliveryRuns_IsSentAtOnceAndHoldsNothingBack) {
  AckLedger ledger(1);
  auto tokens = deliver(ledger, 0, 1, 4);
  EXPECT_EQ(ledger.settle(tokens[2], SettleAction::reject), Verdict::send_now);
  ledger.settle(tokens[3], SettleAction::ack);
  const AckPlan plan = ledger.take_acks(0);  // 1 still runs
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_EQ(plan.singles, std::vector<std::uint64_t>{3});
  EXPECT_EQ(ledger.outstanding(0), 2U);  // 1 and 4
}

TEST(AckLedger, SettledTwice_TheSecondIsUnknownAndSendsNothing) {
  AckLedger ledger(1);
  auto tokens = deliver(ledger, 0, 1, 2);
  EXPECT_EQ(ledger.settle(tokens[1], SettleAction::ack), Verdict::held);
  EXPECT_EQ(ledger.settle(tokens[1], SettleAction::ack), Verdict::unknown);
  EXPECT_EQ(ledger.settle(tokens[1], SettleAction::requeue), Verdict::unknown);
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_EQ(plan.multiple_up_to, 1U);
  EXPECT_TRUE(plan.singles.empty());
  EXPECT_EQ(ledger.settle(tokens[2], SettleAction::reject), Verdict::send_now);
  EXPECT_EQ(ledger.settle(tokens[2], SettleAction::ack), Verdict::unknown);
  EXPECT_FALSE(ledger.has_held_acks(0));
}

TEST(AckLedger, NothingHeld_TakeAcksIsEmpty) {
  AckLedger ledger(1);
  deliver(ledger, 0, 1, 2);
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_TRUE(plan.singles.empty());
}

TEST(AckLedger, ReconnectInTheMiddle_OldSettlementsAreStaleAndHeldAcksAreForgotten) {
  AckLedger ledger(1);
  auto old_tokens = deliver(ledger, 0, 1, 3);
  ledger.settle(old_tokens[1], SettleAction::ack);  // held, not sent yet
  ledger.connection_lost();

  EXPECT_FALSE(ledger.has_held_acks(0));  // the broker requeued it: an ack now means nothing
  EXPECT_EQ(ledger.outstanding(0), 0U);
  EXPECT_FALSE(ledger.is_current(old_tokens[2]));
  EXPECT_EQ(ledger.settle(old_tokens[2], SettleAction::ack), Verdict::stale);
  EXPECT_EQ(ledger.settle(old_tokens[3], SettleAction::requeue), Verdict::stale);

  // The new channel numbers its deliveries from 1 again: an old tag must not settle a new one.
  auto new_tokens = deliver(ledger, 0, 1, 2);
  EXPECT_NE(new_tokens[1].incarnation, old_tokens[1].incarnation);
  EXPECT_EQ(ledger.settle(old_tokens[1], SettleAction::ack), Verdict::stale);
  EXPECT_EQ(ledger.outstanding(0), 2U);
  EXPECT_FALSE(ledger.has_held_acks(0));

  EXPECT_EQ(ledger.settle(new_tokens[2], SettleAction::ack), Verdict::held);
  const AckPlan plan = ledger.take_acks(0);  // new 1 still runs
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_EQ(plan.singles, std::vector<std::uint64_t>{2});
}

TEST(AckLedger, ReconnectBetweenSettleAndFlush_TheHeldAckIsNeverSentOnTheNewChannel) {
  AckLedger ledger(1);
  auto old_tokens = deliver(ledger, 0, 1, 1);
  ledger.settle(old_tokens[1], SettleAction::ack);
  ledger.connection_lost();
  deliver(ledger, 0, 1, 1);  // tag 1 again, another message
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_TRUE(plan.singles.empty());
}

TEST(AckLedger, OneChannelLost_OnlyItsTokensGoStaleAndTheOthersKeepTheirHeldAcks) {
  AckLedger ledger(2);
  auto first = deliver(ledger, 0, 1, 2);
  auto second = deliver(ledger, 1, 1, 2);
  ledger.settle(first[1], SettleAction::ack);
  ledger.settle(second[1], SettleAction::ack);

  ledger.channel_lost(0);

  EXPECT_FALSE(ledger.is_current(first[2]));
  EXPECT_EQ(ledger.settle(first[2], SettleAction::ack), Verdict::stale);
  EXPECT_FALSE(ledger.has_held_acks(0));
  EXPECT_TRUE(ledger.is_current(second[2]));
  EXPECT_EQ(ledger.settle(second[2], SettleAction::ack), Verdict::held);
  const AckPlan plan = ledger.take_acks(1);
  EXPECT_EQ(plan.multiple_up_to, 2U);
  EXPECT_EQ(ledger.incarnation(0), 2U);
  EXPECT_EQ(ledger.incarnation(1), 1U);
}

TEST(AckLedger, ChannelsAreIndependent_SameTagsNeverCoalesceAcrossThem) {
  AckLedger ledger(2);
  auto first = deliver(ledger, 0, 1, 3);
  auto second = deliver(ledger, 1, 1, 3);
  ledger.settle(first[1], SettleAction::ack);
  ledger.settle(first[2], SettleAction::ack);
  ledger.settle(second[3], SettleAction::ack);
  EXPECT_EQ(ledger.take_acks(0).multiple_up_to, 2U);
  const AckPlan other = ledger.take_acks(1);
  EXPECT_FALSE(other.multiple_up_to.has_value());
  EXPECT_EQ(other.singles, std::vector<std::uint64_t>{3});
}

TEST(AckLedger, TokenOfNoSuchChannel_IsStale) {
  AckLedger ledger(1);
  const DeliveryToken stray{1, 5, 1};
  EXPECT_FALSE(ledger.is_current(stray));
  EXPECT_EQ(ledger.settle(stray, SettleAction::ack), Verdict::stale);
}

// A model of the broker's side of one channel: which deliveries it still holds unacked, and of
// the handlers: which are still running, which acked and not yet sent.
struct ChannelModel {
  std::set<std::uint64_t> broker_unacked;
  std::set<std::uint64_t> settled_unsent;
  std::vector<DeliveryToken> running;
  std::uint64_t next_tag = 1;

  void deliver_some(AckLedger& ledger, std::mt19937& random) {
    const int deliveries = std::uniform_int_distribution<int>(0, 6)(random);
    for (int i = 0; i < deliveries; ++i) {
      running.push_back(ledger.delivered(0, next_tag));
      broker_unacked.insert(next_tag++);
    }
    std::shuffle(running.begin(), running.end(), random);
  }
  // The next settlement, in random order; `action` the handler's.
  DeliveryToken finish_one(SettleAction action) {
    const DeliveryToken token = running.back();
    running.pop_back();
    if (action == SettleAction::ack)
      settled_unsent.insert(token.tag);
    else
      broker_unacked.erase(token.tag);  // basic.nack / basic.reject, sent at once
    return token;
  }
  std::set<std::uint64_t> still_running() const {
    std::set<std::uint64_t> tags;
    for (const auto& token : running)
      tags.insert(token.tag);
    return tags;
  }
  // What the broker makes of the plan's acks: a `multiple` ack may only span tags already
  // settled, and no single ack is sent twice.
  void receive(const AckPlan& plan) {
    const std::set<std::uint64_t> running_now = still_running();
    if (plan.multiple_up_to) {
      for (std::uint64_t tag : broker_unacked) {
        if (tag > *plan.multiple_up_to)
          break;
        ASSERT_EQ(running_now.count(tag), 0U)
            << "multiple ack up to " << *plan.multiple_up_to << " covers running " << tag;
        settled_unsent.erase(tag);
      }
      broker_unacked.erase(broker_unacked.begin(),
                           broker_unacked.upper_bound(*plan.multiple_up_to));
    }
    for (std::uint64_t tag : plan.singles) {
      ASSERT_EQ(running_now.count(tag), 0U);
      ASSERT_EQ(broker_unacked.erase(tag), 1U) << "single ack of " << tag << " sent twice";
      settled_unsent.erase(tag);
    }
  }
};

// Random deliveries and settlements in random batches: a `multiple` ack may only span tags
// already settled, and after each flush the broker holds exactly the deliveries not settled yet.
TEST(AckLedger, RandomSettlements_NeverAckAnUnsettledDeliveryAndHoldNothingBack) {
  std::mt19937 random(20261130);
  for (int round = 0; round < 200; ++round) {
    AckLedger ledger(1);
    ChannelModel channel;
    for (int batch = 0; batch < 30; ++batch) {
      channel.deliver_some(ledger, random);
      const std::size_t settles =
          std::uniform_int_distribution<std::size_t>(0, channel.running.size())(random);
      for (std::size_t i = 0; i < settles; ++i) {
        const int kind = std::uniform_int_distribution<int>(0, 9)(random);
        const SettleAction action = kind < 8   ? SettleAction::ack
                                    : kind < 9 ? SettleAction::requeue
                                               : SettleAction::reject;
        const Verdict verdict = ledger.settle(channel.finish_one(action), action);
        ASSERT_EQ(verdict, action == SettleAction::ack ? Verdict::held : Verdict::send_now);
      }
      channel.receive(ledger.take_acks(0));
      ASSERT_EQ(channel.broker_unacked, channel.still_running())
          << "round " << round << ", batch " << batch;
    }
  }
}

// The same with singles held: still never an ack of an unsettled delivery nor one sent twice;
// what is held back is never more than the channel may hold, and a final flush of everything
// leaves the broker holding exactly the deliveries not settled.
TEST(AckLedger, RandomSettlementsHoldingSingles_NeverAckAnUnsettledOneAndHoldOnlyAFew) {
  std::mt19937 random(20261203);
  const std::size_t may_hold = 3;
  for (int round = 0; round < 200; ++round) {
    AckLedger ledger(1);
    ledger.hold_singles(0, may_hold);
    ChannelModel channel;
    auto now = AckLedger::Clock::now();
    for (int batch = 0; batch < 30; ++batch) {
      channel.deliver_some(ledger, random);
      const std::size_t settles =
          std::uniform_int_distribution<std::size_t>(0, channel.running.size())(random);
      for (std::size_t i = 0; i < settles; ++i) {
        ASSERT_EQ(ledger.settle(channel.finish_one(SettleAction::ack), SettleAction::ack),
                  Verdict::held);
      }
      now += std::chrono::microseconds(std::uniform_int_distribution<int>(0, 1500)(random));
      channel.receive(ledger.take_acks(0, now));
      ASSERT_LE(channel.settled_unsent.size(), may_hold)
          << "round " << round << ", batch " << batch;
    }
    channel.receive(ledger.take_acks(0, now, true));
    ASSERT_TRUE(channel.settled_unsent.empty());
    ASSERT_EQ(channel.broker_unacked, channel.still_running()) << "round " << round;
  }
}

// Held singles (hold_singles): a handler that finishes ahead of an older one does not cost a
// frame of its own while the older one is about to finish.
TEST(AckLedger, HoldingSingles_AnAckAboveTheOldestWaitsAndOneMultipleCoversThemAll) {
  AckLedger ledger(1);
  ledger.hold_singles(0, 4);
  auto tokens = deliver(ledger, 0, 1, 6);
  const auto start = AckLedger::Clock::now();
  for (std::uint64_t tag : {3, 4, 5})
    ledger.settle(tokens[tag], SettleAction::ack);
  AckPlan plan = ledger.take_acks(0, start);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_TRUE(plan.singles.empty());
  EXPECT_TRUE(ledger.has_held_acks(0));

  // 1 and 2 finish within the hold: one multiple ack up to 5, nothing else.
  ledger.settle(tokens[1], SettleAction::ack);
  ledger.settle(tokens[2], SettleAction::ack);
  plan = ledger.take_acks(0, start + std::chrono::milliseconds(1));
  EXPECT_EQ(plan.multiple_up_to, 5U);
  EXPECT_TRUE(plan.singles.empty());
  EXPECT_FALSE(ledger.has_held_acks(0));
  EXPECT_EQ(ledger.outstanding(0), 1U);
}

// How many are held: what the other handlers may settle ahead of the oldest's, so that two
// worker processes, each with a window of half the prefetch, never ack a whole window as singles.
TEST(AckLedger, SinglesToHold_AllButTheOldestHandlersShareAndAQuarterAtLeast) {
  EXPECT_EQ(AckLedger::singles_to_hold(200, 1), 50U);   // one handler: a quarter
  EXPECT_EQ(AckLedger::singles_to_hold(200, 2), 100U);  // the other process's whole window
  EXPECT_EQ(AckLedger::singles_to_hold(200, 4), 150U);  // three windows of 50
  EXPECT_EQ(AckLedger::singles_to_hold(20, 3), 14U);    // windows of 6, 7 and 7
  EXPECT_EQ(AckLedger::singles_to_hold(20, 40), 20U);   // more handlers than the prefetch
  EXPECT_EQ(AckLedger::singles_to_hold(1, 2), 1U);
  EXPECT_EQ(AckLedger::singles_to_hold(0, 2), 0U);
}

// A second process's whole window settled ahead of the first's oldest is held, and one multiple
// ack covers both windows once the oldest is settled.
TEST(AckLedger, HoldingSingles_AWholeWindowAheadOfTheOldestWaitsForIt) {
  AckLedger ledger(1);
  ledger.hold_singles(0, AckLedger::singles_to_hold(20, 2));
  auto tokens = deliver(ledger, 0, 1, 20);
  const auto start = AckLedger::Clock::now();
  for (std::uint64_t tag = 11; tag <= 20; ++tag)
    ledger.settle(tokens[tag], SettleAction::ack);
  AckPlan plan = ledger.take_acks(0, start);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_TRUE(plan.singles.empty()) << plan.singles.size() << " singles sent";

  for (std::uint64_t tag = 1; tag <= 10; ++tag)
    ledger.settle(tokens[tag], SettleAction::ack);
  plan = ledger.take_acks(0, start + std::chrono::milliseconds(1));
  EXPECT_EQ(plan.multiple_up_to, 20U);
  EXPECT_TRUE(plan.singles.empty());
  EXPECT_EQ(ledger.outstanding(0), 0U);
}

TEST(AckLedger, HoldingSingles_TheyGoOutOnceTheHoldIsOver) {
  AckLedger ledger(1);
  ledger.hold_singles(0, 4);
  auto tokens = deliver(ledger, 0, 1, 4);
  const auto start = AckLedger::Clock::now();
  ledger.settle(tokens[3], SettleAction::ack);
  EXPECT_TRUE(ledger.take_acks(0, start).singles.empty());
  ledger.settle(tokens[2], SettleAction::ack);
  EXPECT_TRUE(ledger.take_acks(0, start + AckLedger::kSinglesHeldFor / 2).singles.empty());
  // The oldest still runs when the hold is over: both go, as singles, once.
  const AckPlan plan = ledger.take_acks(0, start + AckLedger::kSinglesHeldFor);
  EXPECT_FALSE(plan.multiple_up_to.has_value());
  EXPECT_EQ(plan.singles, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_FALSE(ledger.has_held_acks(0));
}

TEST(AckLedger, HoldingSingles_NoMoreThanTheChannelMayHold) {
  AckLedger ledger(1);
  ledger.hold_singles(0, 2);
  auto tokens = deliver(ledger, 0, 1, 5);
  const auto now = AckLedger::Clock::now();
  ledger.settle(tokens[2], SettleAction::ack);
  ledger.settle(tokens[3], SettleAction::ack);
  EXPECT_TRUE(ledger.take_acks(0, now).singles.empty());
  ledger.settle(tokens[4], SettleAction::ack);
  EXPECT_EQ(ledger.take_acks(0, now).singles, (std::vector<std::uint64_t>{2, 3, 4}));
}

TEST(AckLedger, HoldingSingles_EverythingSendsThemAtOnce) {
  AckLedger ledger(1);
  ledger.hold_singles(0, 8);
  auto tokens = deliver(ledger, 0, 1, 3);
  const auto now = AckLedger::Clock::now();
  ledger.settle(tokens[2], SettleAction::ack);
  EXPECT_TRUE(ledger.take_acks(0, now).singles.empty());
  // A cancel or a close: what is held goes now.
  EXPECT_EQ(ledger.take_acks(0, now, true).singles, std::vector<std::uint64_t>{2});
  EXPECT_FALSE(ledger.has_held_acks(0));
}

TEST(AckLedger, HoldingSingles_AChannelLostForgetsThem) {
  AckLedger ledger(1);
  ledger.hold_singles(0, 8);
  auto tokens = deliver(ledger, 0, 1, 3);
  ledger.settle(tokens[3], SettleAction::ack);
  EXPECT_TRUE(ledger.take_acks(0).singles.empty());
  ledger.channel_lost(0);  // the broker requeues them: never acked on the new channel
  EXPECT_FALSE(ledger.has_held_acks(0));
  auto fresh = deliver(ledger, 0, 1, 1);
  ledger.settle(fresh[1], SettleAction::ack);
  const AckPlan plan = ledger.take_acks(0);
  EXPECT_EQ(plan.multiple_up_to, 1U);
  EXPECT_TRUE(plan.singles.empty());
}

// Delivery::stale() asks from worker threads while the I/O thread moves incarnations on.
TEST(AckLedger, IsCurrentFromOtherThreads_WhileIncarnationsMoveOn) {
  AckLedger ledger(2);
  const DeliveryToken first = ledger.delivered(0, 1);
  std::atomic<bool> done{false};
  std::atomic<int> seen_stale{0};
  std::thread reader([&] {
    while (!done.load()) {
      if (!ledger.is_current(first))
        seen_stale.fetch_add(1);
    }
  });
  for (int i = 0; i < 1000; ++i)
    ledger.connection_lost();
  done = true;
  reader.join();
  EXPECT_FALSE(ledger.is_current(first));
  EXPECT_EQ(ledger.incarnation(0), 1001U);
  EXPECT_EQ(ledger.incarnation(1), 1001U);
}

}  // namespace
}  // namespace warren::broker
