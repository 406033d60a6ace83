// When the SQLite queue engine writes a settlement: settlements are grouped into one transaction
// while the worker still has rows to handle, but none waits longer than a few milliseconds, nor
// until the engine's next timer (the poll of the file is set to a minute here; the rescue of
// expired leases still ticks every second, so a settlement held for a timer shows as a wait of
// up to a second).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "config/config.h"
#include "config/routing_table.h"
#include "conformance/recording_sink.h"
#include "eventually.h"
#include "queue/sqlite_connection.h"
#include "queue/sqlite_transport.h"
#include "temp_dir.h"

namespace warren::transport::testing {
namespace {

using namespace std::chrono_literals;

class SqliteSettlementTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    config::QueueConfig queue;
    queue.name = "timing.q";
    queue.type = config::QueueType::classic;
    config_.queues.push_back(queue);
    config_.broker.transport = config::BrokerConfig::Transport::sqlite;
    queue::SqliteQueueOptions options;
    options.path = dir_.path() / "queue.db";
    options.poll_interval = 60s;
    options.owner = queue::lease_owner_for("timing-host");
    transport_ =
        std::make_unique<queue::SqliteTransport>(options, config::routing_table(config_), nullptr);
  }

  void TearDown() override {
    transport_->close();
    sink_.clear();
  }

  void publish(int count) {
    for (int n = 0; n < count; ++n) {
      OutboundMessage message;
      message.routing_key = "timing.q";  // the default exchange: straight to the queue
      message.message_id = "m-" + std::to_string(n);
      message.body = "body";
      transport_->publish(message);
    }
  }

  // Rows of the queue in `status`, read through a connection of the test's own.
  std::int64_t rows(const char* status) {
    if (!db_)
      db_ = std::make_unique<queue::SqliteConnection>(
          queue::SqliteOpenOptions{dir_.path() / "queue.db"});
    queue::Statement count(*db_, "SELECT count(*) FROM warren_queue WHERE status = ?1");
    count.bind(1, std::string_view(status));
    count.step();
    const std::int64_t n = count.integer(0);
    count.reset();
    return n;
  }

  test_support::TempDir dir_;
  config::Config config_;
  std::unique_ptr<queue::SqliteTransport> transport_;
  std::unique_ptr<queue::SqliteConnection> db_;
  RecordingSink sink_;
};

TEST_F(SqliteSettlementTiming, OneAckWhileOthersAreStillHandled_IsWrittenWithinMilliseconds) {
  publish(3);
  transport_->start({{"worker", "timing.q", 10, &sink_, ""}});
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
  transport_->start({{"worker", "timing.q", 2, &sink_, ""}});
  ASSERT_EQ(sink_.wait_for(2, 10s), 2u);

  sink_.at(0).settle(Settlement::ack());
  sink_.at(1).settle(Settlement::ack());  // the worker has nothing left: written and refilled

  ASSERT_EQ(sink_.wait_for(4, 5s), 4u) << "the next rows were not claimed";
  EXPECT_EQ(rows("done"), 2);
  EXPECT_EQ(rows("running"), 2);
}

}  // namespace
}  // namespace warren::transport::testing
