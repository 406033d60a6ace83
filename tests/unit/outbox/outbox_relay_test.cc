// OutboxRelay: lanes on threads, metrics refresh, and a prompt stop.
#include "outbox/outbox_relay.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_outbox.h"

namespace warren::outbox {
namespace {

using namespace std::chrono_literals;
using testing::FakeOutboxStore;
using testing::FakeRowPublisher;
using testing::make_rows;

template <typename Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate())
      return true;
    std::this_thread::sleep_for(5ms);
  }
  return predicate();
}

OutboxRelayOptions options(std::chrono::milliseconds poll_interval) {
  OutboxRelayOptions result;
  result.outbox = "orders";
  result.batch = 4;
  result.poll_interval = poll_interval;
  result.stats_interval = 10ms;
  return result;
}

TEST(OutboxRelay, RowsInTheTable_AreAllPublishedAcrossLanes) {
  FakeRowPublisher publisher(nullptr);
  std::vector<std::unique_ptr<OutboxStore>> lanes;
  auto store = std::make_unique<FakeOutboxStore>(nullptr);
  FakeOutboxStore& table = *store;
  table.add_rows(make_rows(10));
  lanes.push_back(std::move(store));
  observability::Metrics metrics;
  OutboxRelay relay(options(10ms), std::move(lanes), publisher, &metrics, nullptr);
  relay.start();

  EXPECT_TRUE(eventually([&] { return publisher.published_count() == 10; }));
  EXPECT_TRUE(eventually([&] { return metrics.outbox_relayed("orders").Value() == 10; }));
  relay.stop();
  EXPECT_EQ(table.pending(), 0u);
}

TEST(OutboxRelay, Metrics_ShowTheTablesPendingDeadAndLag) {
  FakeRowPublisher publisher(nullptr);
  publisher.is_ready = false;  // nothing leaves: the gauges show the table as it is
  std::vector<std::unique_ptr<OutboxStore>> lanes;
  auto store = std::make_unique<FakeOutboxStore>(nullptr);
  store->add_rows(make_rows(7));
  lanes.push_back(std::move(store));
  observability::Metrics metrics;
  OutboxRelay relay(options(10ms), std::move(lanes), publisher, &metrics, nullptr);
  relay.start();

  EXPECT_TRUE(eventually([&] { return metrics.outbox_pending("orders").Value() == 7; }));
  EXPECT_EQ(metrics.outbox_dead("orders").Value(), 3);
  EXPECT_EQ(metrics.outbox_lag_seconds("orders").Value(), 12.5);
}

TEST(OutboxRelay, Stop_ReturnsPromptlyWhileLanesWaitForAPoll) {
  FakeRowPublisher publisher(nullptr);
  std::vector<std::unique_ptr<OutboxStore>> lanes;
  auto first = std::make_unique<FakeOutboxStore>(nullptr);
  auto second = std::make_unique<FakeOutboxStore>(nullptr);
  const FakeOutboxStore& first_lane = *first;
  const FakeOutboxStore& second_lane = *second;
  lanes.push_back(std::move(first));
  lanes.push_back(std::move(second));
  OutboxRelay relay(options(60s), std::move(lanes), publisher, nullptr, nullptr);
  relay.start();
  // Both lanes found nothing to claim and went into their 60 s wait.
  ASSERT_TRUE(eventually([&] {
    return first_lane.waits_started.load() >= 1 && second_lane.waits_started.load() >= 1;
  }));

  const auto started = std::chrono::steady_clock::now();
  relay.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

TEST(OutboxRelay, NoLanes_IsRefused) {
  FakeRowPublisher publisher(nullptr);
  EXPECT_THROW(OutboxRelay(options(1s), {}, publisher, nullptr, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace warren::outbox
