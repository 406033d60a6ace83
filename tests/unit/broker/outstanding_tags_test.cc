// Specification of OutstandingTags: the same answers as an ordered set of the tags delivered and
// not settled, whatever the order of settlements, and memory bounded by what is outstanding.
#include "broker/outstanding_tags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace warren::broker {
namespace {

TEST(OutstandingTags, SettledInOrder_TheOldestMovesUpAndNothingIsLeft) {
  OutstandingTags tags;
  for (std::uint64_t tag = 1; tag <= 5; ++tag)
    tags.add(tag);
  EXPECT_EQ(tags.oldest(), 1U);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) {
    EXPECT_TRUE(tags.remove(tag));
    EXPECT_EQ(tags.oldest(), tag + 1);
  }
  EXPECT_TRUE(tags.remove(5));
  EXPECT_TRUE(tags.empty());
  EXPECT_EQ(tags.oldest(), std::nullopt);
}

TEST(OutstandingTags, SettledTwiceOrNeverDelivered_IsNotOutstanding) {
  OutstandingTags tags;
  tags.add(1);
  tags.add(2);
  EXPECT_FALSE(tags.remove(3));
  EXPECT_TRUE(tags.remove(2));
  EXPECT_FALSE(tags.remove(2));
  EXPECT_FALSE(tags.remove(0));
  EXPECT_EQ(tags.size(), 1U);
  EXPECT_EQ(tags.oldest(), 1U);
}

TEST(OutstandingTags, ALaterOneSettledFirst_TheOldestStaysUntilItIsSettled) {
  OutstandingTags tags;
  for (std::uint64_t tag = 10; tag <= 14; ++tag)
    tags.add(tag);
  EXPECT_TRUE(tags.remove(12));
  EXPECT_TRUE(tags.remove(14));
  EXPECT_EQ(tags.oldest(), 10U);
  EXPECT_TRUE(tags.remove(10));
  EXPECT_EQ(tags.oldest(), 11U);
  EXPECT_EQ(tags.size(), 2U);
}

TEST(OutstandingTags, ATagBelowTheNewest_GoesInItsPlace) {
  OutstandingTags tags;
  tags.add(5);
  tags.add(9);
  tags.add(7);
  tags.add(7);  // twice: held once
  EXPECT_EQ(tags.size(), 3U);
  EXPECT_TRUE(tags.remove(5));
  EXPECT_EQ(tags.oldest(), 7U);
}

// Two dispatchers settle a little out of order, for a long time, with one delivery never settled
// (a handler that hangs): the answers match an ordered set at every step.
TEST(OutstandingTags, RandomSettlementOrder_MatchesAnOrderedSet) {
  std::mt19937_64 random(17);
  OutstandingTags tags;
  std::set<std::uint64_t> model;
  std::uint64_t next = 1;
  const std::uint64_t stuck = 3;
  for (int step = 0; step < 200'000; ++step) {
    if (model.size() < 200 && (random() % 2 == 0 || model.size() < 2)) {
      tags.add(next);
      model.insert(next++);
    } else {
      // Mostly one of the oldest few, sometimes any of them.
      auto it = model.begin();
      const std::size_t reach =
          random() % 8 == 0 ? model.size() : std::min<std::size_t>(4, model.size());
      std::advance(it, static_cast<long>(random() % reach));
      if (*it == stuck)
        continue;
      ASSERT_TRUE(tags.remove(*it));
      model.erase(it);
    }
    ASSERT_EQ(tags.size(), model.size());
    ASSERT_EQ(tags.oldest(), model.empty() ? std::nullopt : std::optional(*model.begin()));
  }
  ASSERT_FALSE(tags.remove(next));
  EXPECT_EQ(tags.oldest(), stuck);
}

}  // namespace
}  // namespace warren::broker
