// See row_settlement.h.
#include "queue/row_settlement.h"

#include "observability/timestamp.h"
#include "queue/headers_json.h"
#include "transport/failure_headers.h"

namespace warren::queue {

RowSettlement row_settlement_for(const ClaimedRow& row, const transport::Settlement& settlement) {
  using Kind = transport::Settlement::Kind;
  RowSettlement out;
  switch (settlement.kind) {
    case Kind::ack:
      out.status = RowSettlement::Status::done;
      return out;
    case Kind::requeue:
      out.status = RowSettlement::Status::pending;
      return out;
    case Kind::retry_later: {
      if (row.max_attempts && settlement.next_attempt > *row.max_attempts) {
        transport::Settlement dead = settlement;
        dead.kind = Kind::dead_letter;
        dead.reason = settlement.reason + " (the row's max_attempts, " +
                      std::to_string(*row.max_attempts) + ", is reached)";
        return row_settlement_for(row, dead);
      }
      transport::TextHeaders headers = row.message.headers;
      transport::add_retry_headers(headers, row.message, settlement,
                                   observability::utc_now_rfc3339());
      out.status = RowSettlement::Status::retry;
      out.attempts = static_cast<std::int64_t>(settlement.next_attempt) - 1;
      out.delay = std::chrono::duration_cast<std::chrono::milliseconds>(settlement.delay);
      out.headers_json = headers_to_json(headers);
      if (!settlement.reason.empty())
        out.error = settlement.reason;
      return out;
    }
    case Kind::dead_letter: {
      transport::TextHeaders headers = row.message.headers;
      transport::add_dead_letter_headers(headers, row.message, settlement,
                                         observability::utc_now_rfc3339());
      out.status = RowSettlement::Status::dead;
      out.attempts = static_cast<std::int64_t>(settlement.attempt);
      out.headers_json = headers_to_json(headers);
      out.error = settlement.reason;
      return out;
    }
  }
  return out;
}

}  // namespace warren::queue
