// A row whose lease expired while this process still held it (the handler outlived the lease)
// is rescued and claimed again by the same process: two deliveries of one row. Each is its own
// claim: the stale one's settlement is dropped without touching the new claim, which this process
// still holds, extends and gives back at close.
#include <gtest/gtest.h>

#include <chrono>

#include "eventually.h"
#include "sqlite_transport_fixture.h"

namespace warren::transport::testing {
namespace {

using namespace std::chrono_literals;

class SqliteReclaimedRow : public SqliteTransportFixture {
 protected:
  // Expires the leases of the running rows, as a handler that outlived its lease would see.
  void expire_leases() {
    rows("running");  // opens the test's connection
    queue::Statement expire(*db_,
                            "UPDATE warren_queue SET lease_until = 0 WHERE status = 'running'");
    ASSERT_EQ(expire.run(), 1);
  }
};

TEST_F(SqliteReclaimedRow, StaleCopySettled_TheNewClaimIsStillHeldAndGivenBackAtClose) {
  publish(1);
  transport_->start({{"worker", kQueue, 10, &sink_, ""}});
  ASSERT_EQ(sink_.wait_for(1, 10s), 1u);
  expire_leases();
  ASSERT_EQ(sink_.wait_for(2, 10s), 2u) << "the rescued row was not claimed again";
  ASSERT_TRUE(sink_.at(0).stale());
  ASSERT_FALSE(sink_.at(1).stale());

  sink_.at(0).settle(Settlement::ack());  // the old copy: dropped by fencing
  ASSERT_TRUE(test_support::eventually([&] { return transport_->stale_settlements() == 1; }, 5s));
  EXPECT_EQ(rows("running"), 1) << "the stale settlement touched the row";

  // The new claim was never settled: close gives it back at once, not when its lease expires.
  transport_->close();
  EXPECT_EQ(rows("pending"), 1) << "the row held by the new claim was not given back at close";
  EXPECT_EQ(rows("running"), 0);
  EXPECT_EQ(rows("done"), 0);
}

}  // namespace
}  // namespace warren::transport::testing
