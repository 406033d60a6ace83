// The SQLite outbox relay keeps warren_outbox from growing without bound: the rows it routed into
// the queue and marked sent are deleted once older than the retention, in chunks, by the relay.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "eventually.h"
#include "queue/sqlite_outbox_relay.h"
#include "queue_file_fixture.h"

namespace warren::queue {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

class SqliteOutboxRetention : public testing::QueueFile {
 protected:
  // `count` rows for the default exchange, routed to queue "orders" by their routing key.
  void enqueue_outbox(int count) {
    db().exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
              std::to_string(count) +
              ") INSERT INTO warren_outbox (routing_key, body) SELECT 'orders', 'order' FROM n");
  }
  std::int64_t outbox_rows() {
    Statement count(db(), "SELECT count(*) FROM warren_outbox");
    count.step();
    return count.integer(0);
  }
};

TEST_F(SqliteOutboxRetention, SentRowsPastTheRetention_AreDeletedByTheRelayWaveAfterWave) {
  SqliteOutboxOptions options;
  options.outbox = "orders";
  options.path = path();
  options.poll_interval = 20ms;
  options.sent_retention = 100ms;
  options.prune_interval = 20ms;
  options.prune_chunk = 50;  // each wave needs several chunks
  transport::RoutingTable routing;
  routing.add_queue("orders");
  SqliteOutboxRelay relay(options, routing, nullptr, nullptr);
  relay.start();

  for (int wave = 1; wave <= 5; ++wave) {
    enqueue_outbox(300);
    // A deadline, not a number of polls: relaying and pruning run on the relay's own schedule.
    ASSERT_TRUE(eventually([&] { return outbox_rows() == 0; }, 30s, 20ms))
        << "wave " << wave << ": " << outbox_rows() << " rows left in warren_outbox";
  }
  relay.stop();
  Statement queued(db(), "SELECT count(*) FROM warren_queue WHERE queue = 'orders'");
  queued.step();
  EXPECT_EQ(queued.integer(0), 5 * 300);  // every row was routed before it went
}

}  // namespace
}  // namespace warren::queue
