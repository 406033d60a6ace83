// The config's exchanges, queues and bindings as a transport::RoutingTable, for the transports
// that route in-process (in-memory, SQLite, PostgreSQL).
#pragma once

#include "config/config.h"
#include "transport/routing.h"

namespace warren::config {

transport::ExchangeType to_transport(ExchangeType type) noexcept;

// Every [[queues]] entry and worker dead_letter_queue becomes a queue; every [[exchanges]] entry
// an exchange; every binding of a queue a binding, its arguments rendered as text.
transport::RoutingTable routing_table(const Config& config);

}  // namespace warren::config
