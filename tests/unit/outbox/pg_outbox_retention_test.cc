// The relay against a real PostgreSQL keeps warren_outbox from growing without bound: sent rows
// older than the retention are deleted by the relay itself, in chunks, with no purge run by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "eventually.h"
#include "fake_outbox.h"
#include "outbox/outbox_relay.h"
#include "outbox/pg_outbox_store.h"
#include "pg_test_schema.h"

namespace warren::outbox {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

class PgOutboxRetentionTest : public ::testing::Test {
 protected:
  std::unique_ptr<OutboxStore> make_store() {
    PgOutboxStoreOptions options;
    options.outbox = schema_.name();
    options.dsn = schema_.dsn();
    return std::make_unique<PgOutboxStore>(options);
  }
  void enqueue(int count) {
    auto db = schema_.connect();
    db.exec_params(
        "INSERT INTO warren_outbox (exchange, routing_key, payload) "
        "SELECT 'livraria.eventos', 'pedido.registrado', convert_to('{}', 'UTF8') "
        "FROM generate_series(1, $1::int)",
        {std::to_string(count)});
  }
  long rows() {
    auto db = schema_.connect();
    return std::stol(db.exec("SELECT count(*) FROM warren_outbox").text(0, 0));
  }

  testing::PgTestSchema schema_;
};

TEST_F(PgOutboxRetentionTest, RelayPrunesSentRowsAfterTheRetention_TheTableKeepsReturningToEmpty) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  OutboxRelayOptions options;
  options.outbox = schema_.name();
  options.default_exchange = "livraria.eventos";
  options.poll_interval = 50ms;
  options.sent_retention = 100ms;
  options.prune_interval = 20ms;
  options.prune_chunk = 50;  // each wave needs several chunks
  std::vector<std::unique_ptr<OutboxStore>> lanes;
  lanes.push_back(make_store());
  lanes.push_back(make_store());
  testing::FakeRowPublisher publisher(nullptr);
  OutboxRelay relay(options, std::move(lanes), publisher, nullptr, nullptr);
  relay.start();

  constexpr int kWaves = 5;
  constexpr int kRowsPerWave = 300;
  for (int wave = 1; wave <= kWaves; ++wave) {
    enqueue(kRowsPerWave);
    // A deadline, not a number of polls: relaying and pruning run on the relay's own schedule.
    ASSERT_TRUE(eventually([&] { return rows() == 0; }, 30s, 20ms))
        << "wave " << wave << ": " << rows() << " rows left in warren_outbox";
  }
  relay.stop();
  EXPECT_EQ(publisher.published_count(), static_cast<std::size_t>(kWaves * kRowsPerWave));
}

}  // namespace
}  // namespace warren::outbox
