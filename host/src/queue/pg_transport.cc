// See pg_transport.h.
#include "queue/pg_transport.h"

#include <memory>

#include "queue/pg_queue_database.h"

namespace warren::queue {
namespace {

std::unique_ptr<TableQueueDatabase> open_database(const PgQueueOptions& options) {
  try {
    return std::make_unique<PgQueueDatabase>(
        PgDatabaseOptions{options.dsn, options.schema, options.owner, options.connect_timeout});
  } catch (const QueueDatabaseError& e) {
    throw transport::TransportError(e.what());
  }
}

}  // namespace

PgTransport::PgTransport(const PgQueueOptions& options, transport::RoutingTable routing,
                         observability::Health* health, observability::Metrics* metrics)
    : TableQueueTransport(
          open_database(options),
          TableQueueOptions{options.poll_interval, options.lease, options.retention},
          std::move(routing), health, metrics) {}

}  // namespace warren::queue
