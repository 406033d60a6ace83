// Specification of TopologyRefresher, which declares the topology again behind consuming after a
// reconnect (issue 21): on the test broker it declares everything on its own connection; against
// a broker that hangs up it keeps trying on its backoff, and its destructor returns at once.
#include "broker/topology_refresher.h"

#include <gtest/gtest.h>

#include <chrono>

#include "eventually.h"
#include "hanging_up_broker.h"
#include "test_broker.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kPatience = 20s;

transport::BackoffPolicy quick_retry() {
  transport::BackoffPolicy retry;
  retry.initial = 50ms;
  retry.max = 100ms;
  return retry;
}

ConnectionOptions short_timeouts() {
  ConnectionOptions options;
  options.connect_timeout = 2s;
  return options;
}

TEST(TopologyRefresher, BrokerHangsUp_KeepsTryingOnItsBackoffAndTheDestructorReturnsAtOnce) {
  test_support::HangingUpBroker broker;
  config::Config config;
  const TopologyDeclarer declarer(config);
  auto refresher = std::make_unique<TopologyRefresher>(declarer, short_timeouts(), quick_retry());
  refresher->refresh(broker.endpoint(), {});
  EXPECT_TRUE(broker.wait_for_connections(3, kPatience)) << broker.connections() << " attempts";
  EXPECT_EQ(refresher->completed(), 0);
  const auto destroying = Clock::now();
  refresher.reset();
  EXPECT_LT(Clock::now() - destroying, 1s);
}

// An empty config still has the retry delay levels (exchanges, quorum queues, bindings), which
// every host declares and shares: declaring them again on the test broker leaves nothing behind.
TEST(TopologyRefresher, OnTheBroker_DeclaresAgainOnItsOwnConnectionAndCountsIt) {
  TEST_BROKER_OR_SKIP(endpoints);
  config::Config config;
  const TopologyDeclarer declarer(config);
  TopologyRefresher refresher(declarer, short_timeouts(), quick_retry());
  refresher.refresh(endpoints->front(), {});
  EXPECT_TRUE(::warren::test_support::eventually([&] { return refresher.completed() == 1; },
                                                 kPatience, 20ms));
}

}  // namespace
}  // namespace warren::broker
