// What the runtime's settlement of a claimed row writes into the row, whichever database holds
// it: both table queues turn a Settlement into the same status, attempts, headers and error.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "queue/claimed_row.h"
#include "transport/settlement.h"

namespace warren::queue {

struct RowSettlement {
  enum class Status { done, pending, retry, dead };
  Status status = Status::done;
  // retry: the failed attempts so far (the next is attempts + 1); dead: the attempt that failed.
  std::int64_t attempts = 0;
  std::chrono::milliseconds delay{0};  // retry: until the next attempt is due
  std::string headers_json;            // retry and dead: the row's headers with x-warren-* added
  std::optional<std::string> error;    // last_error
};

// pending: a requeue (the row is given back, redelivered). A retry past the row's own
// max_attempts is dead, and says so.
RowSettlement row_settlement_for(const ClaimedRow& row, const transport::Settlement& settlement);

}  // namespace warren::queue
