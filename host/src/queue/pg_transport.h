// The table queue on PostgreSQL, for several hosts on one database: the table-queue engine
// (table_queue_transport.h) over PgQueueDatabase (pg_queue_database.h).
#pragma once

#include <chrono>
#include <string>

#include "queue/table_queue_transport.h"

namespace warren::queue {

struct PgQueueOptions {
  std::string dsn;  // never logged
  std::string schema = "public";
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds lease{300000};
  std::chrono::milliseconds retention{3600000};
  std::chrono::milliseconds connect_timeout{10000};
  std::string owner;  // lease_owner of this process's claims: "host/pid"
};

class PgTransport final : public TableQueueTransport {
 public:
  // Connects and creates the schema when missing. Throws TransportError naming the server (never
  // the password) and why when it cannot.
  PgTransport(const PgQueueOptions& options, transport::RoutingTable routing,
              observability::Health* health, observability::Metrics* metrics = nullptr);
};

}  // namespace warren::queue
