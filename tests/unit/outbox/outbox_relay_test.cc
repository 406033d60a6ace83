// OutboxRelay: lanes on threads, metrics refresh, and a prompt stop.
#include "outbox/outbox_relay.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "eventually.h"
#include "fake_outbox.h"

namespace warren::outbox {
namespace {

using namespace std::chrono_literals;
using testing::FakeOutboxStore;
using testing::FakeRowPublisher;
using testing::make_rows;

using test_support::eventually;

// Liveness only: how long a busy machine may take to run a lane or a stats refresh.
constexpr auto kPatience = 30s;

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

  EXPECT_TRUE(eventually([&] { return publisher.published_count() == 10; }, kPatience));
  EXPECT_TRUE(
      eventually([&] { return metrics.outbox_relayed("orders").Value() == 10; }, kPatience));
  relay.stop();
  EXPECT_EQ(table.pending(), 0u);
}

// The three gauges as one reading, so that a test waits for all of them at once: the relay sets
// them one after another, and a test that waited for one and then read the others could catch
// the refresh in between.
struct OutboxGauges {
  double pending, dead, lag_seconds;
  bool operator==(const OutboxGauges&) const = default;
};
OutboxGauges gauges(observability::Metrics& metrics) {
  return {metrics.outbox_pending("orders").Value(), metrics.outbox_dead("orders").Value(),
          metrics.outbox_lag_seconds("orders").Value()};
}

// Waits until the three gauges read `expected` together; the failure shows the last reading.
::testing::AssertionResult gauges_become(observability::Metrics& metrics,
                                         const OutboxGauges& expected) {
  if (eventually([&] { return gauges(metrics) == expected; }, kPatience))
    return ::testing::AssertionSuccess();
  const OutboxGauges last = gauges(metrics);
  return ::testing::AssertionFailure()
         << "pending " << last.pending << ", dead " << last.dead << ", lag " << last.lag_seconds;
}

TEST(OutboxRelay, Metrics_FollowWhatTheTableReportsAtEveryRefresh) {
  FakeRowPublisher publisher(nullptr);
  publisher.is_ready = false;  // nothing leaves: the gauges show the table as it is
  std::vector<std::unique_ptr<OutboxStore>> lanes;
  auto store = std::make_unique<FakeOutboxStore>(nullptr);
  FakeOutboxStore& table = *store;
  table.add_rows(make_rows(7));
  table.set_stats(3, 12.5);
  lanes.push_back(std::move(store));
  observability::Metrics metrics;
  OutboxRelay relay(options(10ms), std::move(lanes), publisher, &metrics, nullptr);
  relay.start();

  EXPECT_TRUE(gauges_become(metrics, {7, 3, 12.5}));

  // The table changes (rows added, some died, the oldest pending aged): the next refresh shows it.
  table.add_rows(make_rows(2));
  table.set_stats(5, 40.0);
  EXPECT_TRUE(gauges_become(metrics, {9, 5, 40.0}));

  // No oldest pending age reported (nothing pending): the lag reads 0, not the last age seen.
  table.set_stats(5, std::nullopt);
  EXPECT_TRUE(gauges_become(metrics, {9, 5, 0}));
  relay.stop();
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
  ASSERT_TRUE(eventually(
      [&] { return first_lane.waits_started.load() >= 1 && second_lane.waits_started.load() >= 1; },
      kPatience));

  const auto started = std::chrono::steady_clock::now();
  relay.stop();
  // Far less than the 60 s poll it would otherwise wait out, with room for a busy machine.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
}

TEST(OutboxRelay, NoLanes_IsRefused) {
  FakeRowPublisher publisher(nullptr);
  EXPECT_THROW(OutboxRelay(options(1s), {}, publisher, nullptr, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace warren::outbox
