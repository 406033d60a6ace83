// Specification of DeferredSettlements, the settlements the consuming connection holds back (a
// requeue after a backoff): nothing comes out before its time, what is due comes out oldest due
// first and only once, and a close takes everything at once.
#include "broker/deferred_settlements.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace warren::broker {
namespace {

using namespace std::chrono_literals;
using Clock = DeferredSettlements::Clock;
using Entry = DeferredSettlements::Entry;

Entry requeue(std::uint64_t tag, Clock::time_point due) {
  return Entry{DeliveryToken{1, 0, tag}, SettleAction::requeue, due};
}

std::vector<std::uint64_t> tags(const std::vector<Entry>& entries) {
  std::vector<std::uint64_t> result;
  for (const auto& entry : entries)
    result.push_back(entry.token.tag);
  return result;
}

TEST(DeferredSettlements, NotYetDue_NothingComesOut) {
  DeferredSettlements held;
  const auto now = Clock::now();
  held.add(requeue(7, now + 1s));
  EXPECT_TRUE(held.take_due(now).empty());
  EXPECT_TRUE(held.take_due(now + 999ms).empty());
  EXPECT_EQ(held.size(), 1U);
}

TEST(DeferredSettlements, SomeDue_ThoseComeOutOldestDueFirstOnceAndTheRestStay) {
  DeferredSettlements held;
  const auto now = Clock::now();
  held.add(requeue(1, now + 3s));
  held.add(requeue(2, now + 2s));
  held.add(requeue(3, now + 1s));
  held.add(requeue(4, now + 2s));

  EXPECT_EQ(tags(held.take_due(now + 2s)), (std::vector<std::uint64_t>{3, 2, 4}));
  EXPECT_TRUE(held.take_due(now + 2s).empty()) << "taken twice";
  EXPECT_EQ(tags(held.take_due(now + 3s)), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(held.size(), 0U);
}

TEST(DeferredSettlements, TakeAll_EverythingAtOnceDueOrNot) {
  DeferredSettlements held;
  const auto now = Clock::now();
  held.add(requeue(1, now + 10s));
  held.add(requeue(2, now - 1s));
  EXPECT_EQ(tags(held.take_all()), (std::vector<std::uint64_t>{2, 1}));
  EXPECT_EQ(held.size(), 0U);
  EXPECT_TRUE(held.take_due(now + 1h).empty());
}

}  // namespace
}  // namespace warren::broker
