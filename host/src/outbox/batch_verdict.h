// What the relay records about a claimed batch once the broker has answered for each row: sent
// (confirmed), failed (nacked, returned, timed out: retried later or dead), or not attempted (the
// broker connection was down or blocked: the row stays pending and no attempt is counted, so an
// outage of the broker never kills rows).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "outbox/outbox_row.h"
#include "outbox/retry_schedule.h"

namespace warren::outbox {

struct PublishOutcome {
  enum class Kind { confirmed, failed, unavailable };
  Kind kind = Kind::confirmed;
  std::string error;  // failed/unavailable: why

  static PublishOutcome confirmed() { return {Kind::confirmed, {}}; }
  static PublishOutcome failed(std::string why) { return {Kind::failed, std::move(why)}; }
  static PublishOutcome unavailable(std::string why) { return {Kind::unavailable, std::move(why)}; }
};

struct RowFailure {
  std::string id;
  std::string message_id;
  int attempts = 0;  // failures including this one
  bool dead = false;
  std::chrono::milliseconds retry_in{0};
  std::string error;
};

struct BatchVerdict {
  std::vector<std::string> sent;  // row ids
  std::vector<std::string> sent_message_ids;
  std::vector<RowFailure> failed;
  std::vector<std::string> not_attempted;  // row ids

  bool records_nothing() const noexcept { return sent.empty() && failed.empty(); }
};

// outcomes[i] is the broker's answer for rows[i]. Throws std::invalid_argument when the sizes
// differ.
BatchVerdict judge_batch(const std::vector<OutboxRow>& rows,
                         const std::vector<PublishOutcome>& outcomes,
                         const RetrySchedule& schedule);

}  // namespace warren::outbox
