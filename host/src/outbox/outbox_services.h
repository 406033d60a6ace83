// What `warren run` adds for the outbox issue: one relay per [[outbox]] (each with a publisher
// connection of its own) and one processed-message store per worker with `idempotency`. Built
// from the config by the composition root (cli/run_command.cc), stopped after the host stops.
#pragma once

#include <memory>
#include <vector>

#include "config/config.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "outbox/outbox_relay.h"
#include "runtime/host.h"

namespace warren::queue {
class SqliteOutboxRelay;
}

namespace warren::outbox {

class PgInboxStore;
class RowPublisher;

// Lanes (threads with a PostgreSQL connection each) per relay: while one lane waits for the
// broker's confirms, the other claims and records, which keeps the broker busy.
inline constexpr int kRelayLanes = 2;

class OutboxServices {
 public:
  OutboxServices(const config::Config& config, observability::Metrics& metrics,
                 observability::Health& health);
  ~OutboxServices();  // stop()s
  OutboxServices(const OutboxServices&) = delete;
  OutboxServices& operator=(const OutboxServices&) = delete;

  // Before host.run(): gives every idempotent worker its store and starts pruning. A store that
  // cannot reach its table now is logged (with what to do) and used anyway: PostgreSQL may come.
  void attach_inbox_stores(runtime::Host& host);
  // Starts the relays: a PostgreSQL outbox needs the RabbitMQ transport (otherwise it is not
  // started, logged); a SQLite outbox routes into the SQLite queue of the same file.
  void start_relays();
  // Stops the relays (rounds in progress finish, all at once: at most about publish_timeout),
  // closes their publishers (bounded even with a publish stuck in a blocked socket) and stops
  // the pruning.
  void stop();

 private:
  const config::Config& config_;
  observability::Metrics& metrics_;
  observability::Health& health_;
  std::vector<std::unique_ptr<PgInboxStore>> inbox_stores_;
  std::vector<std::unique_ptr<RowPublisher>> publishers_;
  std::vector<std::unique_ptr<OutboxRelay>> relays_;
  std::vector<std::unique_ptr<queue::SqliteOutboxRelay>> sqlite_relays_;

  void start_sqlite_relay(const config::OutboxConfig& outbox);
  // A PostgreSQL outbox in the PostgreSQL queue's database: rows move into warren_queue in the
  // transaction that marks them sent (queue_row_publisher.h).
  void start_queue_relay(const config::OutboxConfig& outbox);
  OutboxRelayOptions relay_options_for(const config::OutboxConfig& outbox) const;
};

}  // namespace warren::outbox
