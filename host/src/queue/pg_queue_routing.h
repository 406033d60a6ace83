// The routing of a config (its queues, exchanges and bindings) stored in the PostgreSQL queue's
// routing tables (warren_queues, warren_exchanges, warren_bindings), where warren_publish()
// routes by it inside applications' transactions. Written by `warren topology apply`.
#pragma once

#include <cstddef>
#include <string>

#include "postgres/pg_connection.h"
#include "transport/routing.h"

namespace warren::queue {

struct PgRoutingCounts {
  std::size_t queues = 0;
  std::size_t exchanges = 0;
  std::size_t bindings = 0;
};

// Replaces what the routing tables of `schema` hold with `routing`, in one transaction (a
// concurrent warren_publish() sees the old routing or the new one, never none). The schema must
// exist (ensure_pg_queue_schema). Returns what was stored. Throws postgres::PgError.
PgRoutingCounts store_pg_routing(postgres::PgConnection& connection, const std::string& schema,
                                 const transport::RoutingTable& routing);

}  // namespace warren::queue
