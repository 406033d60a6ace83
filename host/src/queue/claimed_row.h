// A row of a table queue as a claim returns it, and its identity while one owner holds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "transport/message.h"

namespace warren::queue {

// A row's identity while one owner holds it: the lease_token its claim set fences every later
// write (a settlement, an extension, a release) against a row that was rescued and claimed again.
struct RowLease {
  std::int64_t id = 0;
  std::int64_t token = 0;
};

struct ClaimedRow {
  RowLease lease;
  std::int64_t next_attempt_at = 0;  // in the database's own units: orders a claim's rows
  std::optional<std::int64_t> max_attempts;
  transport::InboundMessage message;
  std::string malformed;  // not empty: why the row cannot be delivered (it is dead-lettered)
};

// Leases that expire this many times (the host holding the row died, or hung, each time) make
// the row dead: a message that kills every host that touches it must not loop forever.
inline constexpr int kMaxLeaseExpiries = 3;

}  // namespace warren::queue
