// See batch_verdict.h.
#include "outbox/batch_verdict.h"

#include <stdexcept>

namespace warren::outbox {

BatchVerdict judge_batch(const std::vector<OutboxRow>& rows,
                         const std::vector<PublishOutcome>& outcomes,
                         const RetrySchedule& schedule) {
  if (rows.size() != outcomes.size()) {
    throw std::invalid_argument("judge_batch: " + std::to_string(rows.size()) + " rows but " +
                                std::to_string(outcomes.size()) + " publish outcomes");
  }
  BatchVerdict verdict;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const OutboxRow& row = rows[i];
    const PublishOutcome& outcome = outcomes[i];
    switch (outcome.kind) {
      case PublishOutcome::Kind::confirmed:
        verdict.sent.push_back(row.id);
        verdict.sent_message_ids.push_back(row.message_id);
        break;
      case PublishOutcome::Kind::unavailable:
        verdict.not_attempted.push_back(row.id);
        break;
      case PublishOutcome::Kind::failed: {
        const auto next = schedule.after_failure(row.attempts);
        verdict.failed.push_back(RowFailure{row.id, row.message_id, next.attempts, next.dead,
                                            next.retry_in, outcome.error});
        break;
      }
    }
  }
  return verdict;
}

}  // namespace warren::outbox
