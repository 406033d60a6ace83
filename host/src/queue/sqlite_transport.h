// The broker-less transport on one SQLite file: the table-queue engine
// (table_queue_transport.h) over SqliteQueueDatabase. Several processes on one machine may share
// the file; for several machines, the PostgreSQL queue (pg_transport.h).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "queue/table_queue_transport.h"

namespace warren::queue {

struct SqliteQueueOptions {
  std::filesystem::path path;
  bool synchronous_full = true;
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds lease{300000};
  std::chrono::milliseconds retention{3600000};
  // How long a write waits for another process's write lock before it fails (and is retried).
  std::chrono::milliseconds busy_timeout{10000};
  // lease_owner of this process's claims: "host/pid" (the host name of the config).
  std::string owner;
};

class SqliteTransport final : public TableQueueTransport {
 public:
  // Opens the database (creating the file and schema when missing). Throws TransportError naming
  // the file and why when it cannot be opened or written (corrupt, read-only, a newer schema).
  SqliteTransport(const SqliteQueueOptions& options, transport::RoutingTable routing,
                  observability::Health* health, observability::Metrics* metrics = nullptr);
};

}  // namespace warren::queue
