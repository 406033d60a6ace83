// See sqlite_transport.h.
#include "queue/sqlite_transport.h"

#include <memory>

#include "queue/sqlite_queue_database.h"

namespace warren::queue {
namespace {

std::unique_ptr<TableQueueDatabase> open_database(const SqliteQueueOptions& options) {
  try {
    return std::make_unique<SqliteQueueDatabase>(SqliteDatabaseOptions{
        options.path, options.synchronous_full, options.busy_timeout, options.owner});
  } catch (const SqliteError& e) {
    throw transport::TransportError(e.what());
  }
}

TableQueueOptions engine_options(const SqliteQueueOptions& options) {
  return TableQueueOptions{options.poll_interval, options.lease, options.retention};
}

}  // namespace

SqliteTransport::SqliteTransport(const SqliteQueueOptions& options, transport::RoutingTable routing,
                                 observability::Health* health, observability::Metrics* metrics)
    : TableQueueTransport(open_database(options), engine_options(options), std::move(routing),
                          health, metrics) {}

}  // namespace warren::queue
