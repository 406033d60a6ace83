// See relay_lane.h.
#include "outbox/relay_lane.h"

#include <prometheus/counter.h>

#include <stdexcept>

#include "observability/log.h"
#include "postgres/pg_connection.h"

namespace warren::outbox {
namespace {

std::string join_message_ids(const std::vector<std::string>& ids) {
  std::string joined;
  for (const auto& id : ids) {
    if (!joined.empty())
      joined += ',';
    joined += id;
  }
  return joined;
}

}  // namespace

RelayLane::RelayLane(RelayLaneOptions options, OutboxStore& store, RowPublisher& publisher,
                     const RetrySchedule& schedule, prometheus::Counter* relayed)
    : options_(std::move(options)),
      store_(store),
      publisher_(publisher),
      schedule_(schedule),
      relayed_(relayed) {}

RelayLane::Step RelayLane::step() {
  if (!publisher_.ready())
    return Step::publisher_not_ready;
  const std::string who =
      "outbox '" + options_.outbox + "' lane " + std::to_string(options_.lane) + ": batch ";
  try {
    const std::vector<OutboxRow> rows = store_.claim(options_.batch);
    if (rows.empty()) {
      store_.abandon();
      return Step::nothing_due;
    }
    const std::string batch = who + std::to_string(++batches_);

    std::vector<transport::OutboundMessage> messages;
    messages.reserve(rows.size());
    std::vector<std::size_t> publishable;  // indexes into rows
    std::vector<PublishOutcome> outcomes(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      try {
        messages.push_back(to_outbound_message(rows[i], options_.default_exchange));
        publishable.push_back(i);
      } catch (const std::invalid_argument& e) {
        outcomes[i] = PublishOutcome::failed(e.what());
      }
    }
    if (observability::log_enabled(observability::LogLevel::debug)) {
      std::vector<std::string> ids;
      for (const auto& row : rows)
        ids.push_back(row.message_id);
      observability::log_debug(batch + " claimed " + std::to_string(rows.size()) +
                               " row(s), message ids " + join_message_ids(ids));
    }

    const std::vector<PublishOutcome> published = publisher_.publish_all(messages);
    for (std::size_t k = 0; k < publishable.size(); ++k)
      outcomes[publishable[k]] = published.at(k);

    const BatchVerdict verdict = judge_batch(rows, outcomes, schedule_);
    if (observability::log_enabled(observability::LogLevel::debug)) {
      observability::log_debug(batch + " confirmed " + std::to_string(verdict.sent.size()) +
                               ", failed " + std::to_string(verdict.failed.size()) +
                               ", not attempted " + std::to_string(verdict.not_attempted.size()) +
                               "; recording");
    }
    if (verdict.records_nothing()) {
      store_.abandon();
      observability::log_debug(batch + " rolled back: nothing to record");
    } else {
      store_.complete(verdict);
      observability::log_debug(batch + " committed");
    }
    if (relayed_ != nullptr)
      relayed_->Increment(static_cast<double>(verdict.sent.size()));
    log_failures(verdict);

    if (!verdict.not_attempted.empty())
      return Step::publisher_not_ready;
    return static_cast<int>(rows.size()) >= options_.batch ? Step::batch_full : Step::batch_partial;
  } catch (const postgres::PgError& error) {
    store_.abandon();
    last_error_ = error.what();
    if (error.undefined_table())
      last_error_ +=
          "; create the outbox tables with `warren outbox init -c FILE` (sql/outbox.sql)";
    return Step::store_failed;
  }
}

void RelayLane::log_failures(const BatchVerdict& verdict) const {
  for (const RowFailure& failure : verdict.failed) {
    const std::string row = "outbox '" + options_.outbox + "': row " + failure.id +
                            " (message_id " + failure.message_id + ")";
    if (failure.dead) {
      observability::log_error(row + " is dead after " + std::to_string(failure.attempts) +
                               " failed attempt(s), the last: " + failure.error +
                               "; fix the cause, then `warren outbox retry-dead`");
    } else {
      observability::log_warn(row + " not published (attempt " + std::to_string(failure.attempts) +
                              " of " + std::to_string(schedule_.max_attempts()) +
                              "): " + failure.error + "; retrying in " +
                              std::to_string(failure.retry_in.count()) + " ms");
    }
  }
}

}  // namespace warren::outbox
