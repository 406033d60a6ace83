// A row some host died holding (crashes > 0) is a suspect: the engine claims it alone, once its
// worker has nothing else in flight, so that if it kills the host again no other row is held with
// it (and takes a lease expiry towards 'lease expired 3 times'). The rows without crashes flow as
// usual meanwhile.
#include <gtest/gtest.h>

#include <chrono>

#include "eventually.h"
#include "sqlite_transport_fixture.h"

namespace warren::transport::testing {
namespace {

using namespace std::chrono_literals;

class SqliteSuspectRow : public SqliteTransportFixture {
 protected:
  void mark_crashed(const std::string& message_id) {
    rows("pending");  // opens the test's connection
    queue::Statement mark(*db_, "UPDATE warren_queue SET crashes = 1 WHERE message_id = ?1");
    mark.bind(1, std::string_view(message_id));
    ASSERT_EQ(mark.run(), 1);
  }
};

TEST_F(SqliteSuspectRow, ClaimedAloneOnceTheWorkersOtherRowsAreSettled) {
  publish(6);  // m-0 .. m-5, m-0 oldest
  mark_crashed("m-0");
  transport_->start({{"worker", kQueue, 10, &sink_, ""}});
  // The worker has nothing in flight: the suspect comes first, alone, though it has room for 10.
  ASSERT_EQ(sink_.wait_for(1, 10s), 1u);
  EXPECT_EQ(sink_.at(0).message().message_id, "m-0");
  EXPECT_FALSE(test_support::eventually([&] { return sink_.count() > 1; }, 300ms))
      << "a row was claimed beside the suspect";
  EXPECT_EQ(rows("running"), 1);

  // Settled: the other rows come, in one batch.
  sink_.at(0).settle(Settlement::ack());
  ASSERT_EQ(sink_.wait_for(6, 10s), 6u);
  for (std::size_t i = 1; i < 6; ++i)
    sink_.at(i).settle(Settlement::ack());
  ASSERT_TRUE(test_support::eventually([&] { return rows("done") == 6; }, 5s));
}

TEST_F(SqliteSuspectRow, WaitsWhileTheWorkerHasRowsInFlight) {
  publish(3);  // m-0 .. m-2
  transport_->start({{"worker", kQueue, 10, &sink_, ""}});
  ASSERT_EQ(sink_.wait_for(3, 10s), 3u);
  // Another host died holding m-9, now pending again (written as that host's rescue would):
  // it waits for this worker's three, while a fresh row is claimed beside them.
  rows("pending");  // opens the test's connection
  queue::Statement insert(*db_,
                          "INSERT INTO warren_queue (queue, message_id, crashes) VALUES (?1, "
                          "'m-9', 1)");
  insert.bind(1, std::string_view(kQueue));
  ASSERT_EQ(insert.run(), 1);
  OutboundMessage fresh;
  fresh.routing_key = kQueue;
  fresh.message_id = "m-10";
  transport_->publish(fresh);
  ASSERT_EQ(sink_.wait_for(4, 10s), 4u);
  EXPECT_EQ(sink_.at(3).message().message_id, "m-10") << "the suspect ran beside other rows";
  for (std::size_t i = 0; i < 4; ++i)
    sink_.at(i).settle(Settlement::ack());
  ASSERT_EQ(sink_.wait_for(5, 10s), 5u);
  EXPECT_EQ(sink_.at(4).message().message_id, "m-9");
  sink_.at(4).settle(Settlement::ack());
  ASSERT_TRUE(test_support::eventually([&] { return rows("done") == 5; }, 5s));
}

}  // namespace
}  // namespace warren::transport::testing
