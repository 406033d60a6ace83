// See queue_database.h.
#include "cli/queue_database.h"

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

}  // namespace warren::cli
