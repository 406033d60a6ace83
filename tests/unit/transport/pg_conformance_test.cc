// The transport conformance suite (conformance/transport_conformance.h) on the PostgreSQL table
// queue, against the server scripts/test starts (WARREN_TEST_PG_DSN): a schema of its own per
// test, looked at and tampered with through a connection of the backend's own, as another host
// would. Without the server the suite skips (fails under WARREN_REQUIRE_SERVICES=1).
#include <cstdlib>
#include <random>

#include "config/routing_table.h"
#include "conformance/transport_conformance.h"
#include "postgres/pg_connection.h"
#include "queue/headers_json.h"
#include "queue/pg_transport.h"

namespace warren::transport::testing {
namespace {

std::string base_dsn() {
  const char* dsn = std::getenv("WARREN_TEST_PG_DSN");
  return dsn == nullptr ? std::string() : std::string(dsn);
}

class PgBackend final : public ConformanceBackend {
 public:
  PgBackend() {
    std::random_device random;
    schema_ = "conformance_" + std::to_string(random() % 1000000000);
  }
  ~PgBackend() override {
    if (base_dsn().empty())
      return;
    try {
      postgres::PgConnection admin(postgres::PgConnectOptions{base_dsn(), "conformance test"});
      admin.exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
    } catch (const std::exception&) {
      // The server went away: nothing to clean.
    }
  }
  std::string unavailable() const override {
    return base_dsn().empty() ? "no test PostgreSQL: WARREN_TEST_PG_DSN is not set "
                                "(scripts/services/postgres.sh)"
                              : std::string();
  }
  std::string unique_name(std::string_view base) override { return std::string(base); }
  void prepare(config::Config& config) override {
    config.broker.transport = config::BrokerConfig::Transport::postgres;
    config.broker.postgres.dsn = base_dsn();
    config.broker.postgres.schema = schema_;
  }
  std::unique_ptr<Transport> open(const config::Config& config) override {
    queue::PgQueueOptions options;
    options.dsn = config.broker.postgres.dsn;
    options.schema = config.broker.postgres.schema;
    options.poll_interval = std::chrono::milliseconds(50);
    options.owner = queue::lease_owner_for(config.host.name);
    return std::make_unique<queue::PgTransport>(options, config::routing_table(config), nullptr);
  }
  std::size_t ready_count(const std::string& queue) override {
    const auto result = db().exec_params(
        "SELECT count(*) FROM warren_queue WHERE queue = $1 AND status = 'pending'", {queue});
    return static_cast<std::size_t>(std::stoull(result.text(0, 0)));
  }
  void lose_connection() override {
    // The leases of every running row expire, as when their host stalls past the lease.
    const auto result = db().exec(
        "UPDATE warren_queue SET lease_until = now() - interval '1 second' WHERE status = "
        "'running'");
    ASSERT_GE(result.affected_rows(), 1) << "no running row to lose";
  }
  bool dead_letters_are_delivered() const override { return false; }
  std::vector<InboundMessage> dead_rows(const std::string& queue) override {
    const auto result = db().exec_params(
        "SELECT message_id, body, headers::text, queue FROM warren_queue WHERE queue = $1 AND "
        "status = 'dead' ORDER BY id",
        {queue}, true);
    std::vector<InboundMessage> rows;
    for (int r = 0; r < result.rows(); ++r) {
      InboundMessage row;
      row.message_id = result.text(r, 0);
      row.body = result.text(r, 1);
      std::string why;
      row.headers = queue::headers_from_json(result.text(r, 2), why).value_or(TextHeaders{});
      row.queue = result.text(r, 3);
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  postgres::PgConnection& db() {
    if (!db_) {
      db_ = std::make_unique<postgres::PgConnection>(
          postgres::PgConnectOptions{base_dsn(), "conformance test"});
      db_->exec("SET search_path TO " + schema_);
    }
    return *db_;
  }

  std::string schema_;
  std::unique_ptr<postgres::PgConnection> db_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(Postgres, TransportConformance, PgBackend);

}  // namespace
}  // namespace warren::transport::testing
