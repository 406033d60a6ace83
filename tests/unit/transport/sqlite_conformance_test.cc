// The transport conformance suite (conformance/transport_conformance.h) on the SQLite table
// queue: a fresh database file per test, looked at and tampered with through a connection of the
// backend's own, as another process would.
#include <filesystem>

#include "config/routing_table.h"
#include "conformance/transport_conformance.h"
#include "observability/metrics.h"
#include "queue/headers_json.h"
#include "queue/sqlite_connection.h"
#include "queue/sqlite_transport.h"
#include "temp_dir.h"

namespace warren::transport::testing {
namespace {

class SqliteBackend final : public ConformanceBackend {
 public:
  std::string unique_name(std::string_view base) override { return std::string(base); }
  void prepare(config::Config& config) override {
    config.broker.transport = config::BrokerConfig::Transport::sqlite;
    config.broker.sqlite.path = dir_.path() / "queue.db";
  }
  std::unique_ptr<Transport> open(const config::Config& config) override {
    queue::SqliteQueueOptions options;
    options.path = config.broker.sqlite.path;
    options.poll_interval = std::chrono::milliseconds(50);
    options.owner = queue::lease_owner_for(config.host.name);
    return std::make_unique<queue::SqliteTransport>(options, config::routing_table(config),
                                                    nullptr);
  }
  std::size_t ready_count(const std::string& queue) override {
    queue::Statement count(db(),
                           "SELECT count(*) FROM warren_queue WHERE queue = ?1 AND status = "
                           "'pending'");
    count.bind(1, std::string_view(queue));
    count.step();
    const auto n = static_cast<std::size_t>(count.integer(0));
    count.reset();
    return n;
  }
  void lose_connection() override {
    // The leases of every running row expire, as when their host stalls past the lease.
    queue::Statement expire(db(),
                            "UPDATE warren_queue SET lease_until = 0 WHERE status = 'running'");
    ASSERT_GE(expire.run(), 1) << "no running row to lose";
  }
  bool dead_letters_are_delivered() const override { return false; }
  std::vector<InboundMessage> dead_rows(const std::string& queue) override {
    queue::Statement dead(db(),
                          "SELECT message_id, body, headers, queue FROM warren_queue WHERE queue "
                          "= ?1 AND status = 'dead' ORDER BY id");
    dead.bind(1, std::string_view(queue));
    std::vector<InboundMessage> rows;
    while (dead.step()) {
      InboundMessage row;
      row.message_id = dead.text(0);
      row.body = dead.blob(1);
      std::string why;
      row.headers = queue::headers_from_json(dead.text(2), why).value_or(TextHeaders{});
      row.queue = dead.text(3);
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  queue::SqliteConnection& db() {
    if (!db_)
      db_ = std::make_unique<queue::SqliteConnection>(
          queue::SqliteOpenOptions{dir_.path() / "queue.db"});
    return *db_;
  }

  test_support::TempDir dir_;
  std::unique_ptr<queue::SqliteConnection> db_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(Sqlite, TransportConformance, SqliteBackend);

// Beyond the suite: a publish without mandatory that no queue takes is dropped, and counted in
// warren_published_dropped_total{exchange} (RabbitMQ drops it in the broker, where Warren cannot
// count it).
TEST(SqliteTransportDrops, UnroutableNotMandatoryPublish_IsDroppedAndCounted) {
  test_support::TempDir dir;
  config::Config config;
  config::ExchangeConfig notifications;
  notifications.name = "notifications";
  config.exchanges.push_back(notifications);
  observability::Metrics metrics({"notifications"});
  queue::SqliteQueueOptions options;
  options.path = dir.path() / "queue.db";
  options.owner = queue::lease_owner_for("test");
  queue::SqliteTransport transport(options, config::routing_table(config), nullptr, &metrics);
  OutboundMessage note;
  note.exchange = "notifications";
  note.routing_key = "note";
  note.body = "hello";
  note.mandatory = false;

  transport.publish(note);
  transport.publish(note);
  note.mandatory = true;
  EXPECT_THROW(transport.publish(note), PublishError);

  EXPECT_EQ(metrics.published_dropped("notifications").Value(), 2);
  transport.close();
}

}  // namespace
}  // namespace warren::transport::testing
