// When the SQLite queue engine writes a settlement: settlements are grouped into one transaction
// while the worker still has rows to handle, but none waits longer than a few milliseconds, nor
// until the engine's next timer (the poll of the file is set to a minute here; the rescue of
// expired leases still ticks every second, so a settlement held for a timer shows as a wait of
// up to a second).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "eventually.h"
#include "sqlite_transport_fixture.h"

namespace warren::transport::testing {
namespace {

using namespace std::chrono_literals;

using SqliteSettlementTiming = SqliteTransportFixture;

TEST_F(SqliteSettlementTiming, OneAckWhileOthersAreStillHandled_IsWrittenWithinMilliseconds) {
  publish(3);
  transport_->start({{"worker", kQueue, 10, &sink_, ""}});
  ASSERT_EQ(sink_.wait_for(3, 10s), 3u);

  // Two rows are still being handled and the prefetch is far from half settled: the ack waits
  // for company, but only for the coalescing delay (2 ms), not for the engine's next timer.
  const auto settled = std::chrono::steady_clock::now();
  sink_.at(0).settle(Settlement::ack());

  ASSERT_TRUE(test_support::eventually([&] { return rows("done") == 1; }, 5s))
      << "the ack was not written within 5 s";
  const auto waited = std::chrono::steady_clock::now() - settled;
  EXPECT_LT(waited, 300ms) << "the ack waited "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                           << " ms to be written";
  EXPECT_EQ(rows("running"), 2);
}

TEST_F(SqliteSettlementTiming, LastAckOfTheRowsHandedOut_IsWrittenAndTheNextRowsClaimed) {
  publish(4);
  transport_->start({{"worker", kQueue, 2, &sink_, ""}});
  ASSERT_EQ(sink_.wait_for(2, 10s), 2u);

  sink_.at(0).settle(Settlement::ack());
  sink_.at(1).settle(Settlement::ack());  // the worker has nothing left: written and refilled

  ASSERT_EQ(sink_.wait_for(4, 5s), 4u) << "the next rows were not claimed";
  EXPECT_EQ(rows("done"), 2);
  EXPECT_EQ(rows("running"), 2);
}

}  // namespace
}  // namespace warren::transport::testing
