// See queue_database.h.
#include "cli/queue_database.h"

#include "queue/pg_queue_schema.h"
#include "queue/sqlite_queue_file.h"

namespace warren::cli {

std::unique_ptr<queue::SqliteConnection> open_queue_database(const config::Config& config) {
  queue::SqliteOpenOptions options;
  options.path = config.broker.sqlite.path;
  options.synchronous_full = config.broker.sqlite.synchronous_full;
  // As long as the host's own writes wait for another process's write lock.
  options.busy_timeout = config.broker.publish_timeout;
  return queue::open_queue_file(options);
}

std::unique_ptr<postgres::PgConnection> connect_pg_queue(const config::Config& config,
                                                         const std::string& tool) {
  postgres::PgConnectOptions options;
  options.dsn = config.broker.postgres.dsn;
  options.application_name = tool;
  return std::make_unique<postgres::PgConnection>(options);
}

std::unique_ptr<postgres::PgConnection> open_pg_queue_database(const config::Config& config,
                                                               const std::string& tool) {
  auto connection = connect_pg_queue(config, tool);
  queue::use_pg_queue_schema(*connection, config.broker.postgres.schema);
  return connection;
}

}  // namespace warren::cli
