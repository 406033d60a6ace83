// Specification of the dispatcher's inbox: every item is taken exactly once, in order per taker,
// and a push wakes as many sleeping takers as it has work for: one for what one taker takes at
// once (set_taken_together), all of them for more.
#include "runtime/bounded_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;

// Gives the takers time to fall asleep in the queue. Whether a thread sleeps on a condition
// variable cannot be observed, so this is a pause; it makes the tests mean more, not pass: a
// taker still awake takes the items without sleeping, and every assertion holds either way.
void let_takers_sleep() {
  std::this_thread::sleep_for(50ms);
}

TEST(BoundedQueue, FewerThanATakerTakesTogether_AllGoToOneTakerAtOnce) {
  BoundedQueue<int> queue(100);
  queue.set_taken_together(4);
  auto first = std::async(std::launch::async, [&] { return queue.pop_up_to(4, 10s); });
  let_takers_sleep();
  std::vector<int> items{1, 2, 3};
  ASSERT_EQ(queue.push_all(items), 3U);
  EXPECT_EQ(first.get(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(queue.size(), 0U);
}

TEST(BoundedQueue, MoreThanATakerTakesTogether_WakesTheOthersToo) {
  BoundedQueue<int> queue(100);
  queue.set_taken_together(4);
  auto first = std::async(std::launch::async, [&] { return queue.pop_up_to(4, 30s); });
  auto second = std::async(std::launch::async, [&] { return queue.pop_up_to(4, 30s); });
  let_takers_sleep();
  std::vector<int> items{1, 2, 3, 4, 5, 6};
  const auto pushed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(queue.push_all(items), 6U);
  // Both wake for it: neither waits out its 30 s.
  ASSERT_EQ(first.wait_for(20s), std::future_status::ready);
  ASSERT_EQ(second.wait_for(20s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - pushed_at, 20s);
  std::vector<int> a = first.get(), b = second.get();
  EXPECT_EQ(a.size() + b.size(), 6U);
  std::vector<int> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
}

TEST(BoundedQueue, OneAtATimeTakers_ABatchWakesEveryTaker) {
  BoundedQueue<int> queue(100);
  auto first = std::async(std::launch::async, [&] { return queue.pop_for(30s); });
  auto second = std::async(std::launch::async, [&] { return queue.pop_for(30s); });
  let_takers_sleep();
  std::vector<int> items{7, 8};
  ASSERT_EQ(queue.push_all(items), 2U);
  ASSERT_EQ(first.wait_for(20s), std::future_status::ready);
  ASSERT_EQ(second.wait_for(20s), std::future_status::ready);
  const auto a = first.get(), b = second.get();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a + *b, 15);
}

TEST(BoundedQueue, Closed_PushesFailAndTakersDrainWhatIsLeft) {
  BoundedQueue<int> queue(100);
  std::vector<int> items{1, 2};
  queue.push_all(items);
  queue.close();
  int another = 3;
  EXPECT_FALSE(queue.push(another));
  EXPECT_EQ(queue.pop_up_to(10, 0s), (std::vector<int>{1, 2}));
  EXPECT_EQ(queue.pop_for(1ms), std::nullopt);
}

// Permits (issue 17): the dispatcher's threads and the transport's helping thread take items
// with the worker's `concurrency` permits, so no more than that run at once.
TEST(BoundedQueue, Permits_NoMoreItemsOutThanPermitsAndAReturnedOneIsTakenAgain) {
  BoundedQueue<int> queue(100);
  queue.set_permits(2);
  std::vector<int> items{1, 2, 3};
  ASSERT_EQ(queue.push_all_quietly(items), 3U);
  auto first = queue.try_pop_with_permit();
  auto second = queue.try_pop_with_permit();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->item, 1);
  EXPECT_EQ(second->item, 2);
  EXPECT_NE(first->permit, second->permit);
  EXPECT_LT(std::max(first->permit, second->permit), 2U);
  EXPECT_FALSE(queue.try_pop_with_permit());  // an item, but no permit
  EXPECT_FALSE(queue.pop_with_permit_for(10ms));
  EXPECT_EQ(queue.size(), 1U);

  queue.return_permit(first->permit, /*wake=*/false);
  auto third = queue.try_pop_with_permit();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->item, 3);
  EXPECT_EQ(third->permit, first->permit);
}

TEST(BoundedQueue, Permits_AReturnedPermitWakesATakerWaitingForOne) {
  BoundedQueue<int> queue(100);
  queue.set_permits(1);
  std::vector<int> items{1, 2};
  queue.push_all(items);
  auto held = queue.try_pop_with_permit();
  ASSERT_TRUE(held);
  auto waiter = std::async(std::launch::async, [&] { return queue.pop_with_permit_for(30s); });
  let_takers_sleep();
  const auto returned_at = std::chrono::steady_clock::now();
  queue.return_permit(held->permit);
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - returned_at, 20s);
  const auto taken = waiter.get();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->item, 2);
  EXPECT_EQ(taken->permit, held->permit);
}

TEST(BoundedQueue, PushedQuietly_WakeIfTakeableWakesASleepingTaker) {
  BoundedQueue<int> queue(100);
  queue.set_permits(1);
  auto waiter = std::async(std::launch::async, [&] { return queue.pop_with_permit_for(30s); });
  let_takers_sleep();
  std::vector<int> items{5};
  ASSERT_EQ(queue.push_all_quietly(items), 1U);
  queue.wake_if_takeable();
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  const auto taken = waiter.get();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->item, 5);
}

TEST(BoundedQueue, Closed_PushedQuietlyIsRefusedAndLeftWithTheCaller) {
  BoundedQueue<int> queue(100);
  queue.close();
  std::vector<int> items{1, 2};
  EXPECT_EQ(queue.push_all_quietly(items), 0U);
  EXPECT_EQ(items, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace warren::runtime
