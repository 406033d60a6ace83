// Fakes of the relay's two seams, for tests of its loop: an in-memory outbox table that notes
// every call in a shared event log, and a publisher whose verdict per message the test decides.
#pragma once

#include <poll.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "outbox/outbox_store.h"
#include "outbox/row_publisher.h"
#include "postgres/pg_connection.h"

namespace warren::outbox::testing {

class FakeOutboxStore final : public OutboxStore {
 public:
  explicit FakeOutboxStore(std::vector<std::string>* events) : events_(events) {}

  void add_rows(std::vector<OutboxRow> rows) {
    std::lock_guard lock(mutex_);
    for (auto& row : rows)
      pending_.push_back(std::move(row));
  }

  std::vector<OutboxRow> claim(int limit) override {
    std::lock_guard lock(mutex_);
    note("claim");
    if (fail_claims)
      throw postgres::PgError("fake: server unreachable", "", true);
    std::vector<OutboxRow> rows;
    for (auto it = pending_.begin();
         it != pending_.end() && static_cast<int>(rows.size()) < limit;) {
      rows.push_back(*it);
      it = pending_.erase(it);
    }
    claimed_ = rows;
    return rows;
  }

  void complete(const BatchVerdict& verdict) override {
    std::lock_guard lock(mutex_);
    note("complete");
    if (fail_complete)
      throw postgres::PgError("fake: connection lost during COMMIT", "", true);
    verdicts.push_back(verdict);
    for (const auto& row : claimed_) {
      const bool recorded =
          std::find(verdict.sent.begin(), verdict.sent.end(), row.id) != verdict.sent.end() ||
          std::any_of(verdict.failed.begin(), verdict.failed.end(),
                      [&](const RowFailure& f) { return f.id == row.id; });
      if (!recorded)
        pending_.push_back(row);  // the transaction left it pending
    }
    claimed_.clear();
  }

  void abandon() noexcept override {
    std::lock_guard lock(mutex_);
    note("abandon");
    for (auto& row : claimed_)
      pending_.push_back(std::move(row));  // rolled back: still pending
    claimed_.clear();
  }

  void wait_for_work(std::chrono::milliseconds timeout, int wake_fd) override {
    note_locked("wait");
    ++waits_started;
    pollfd fd{wake_fd, POLLIN, 0};
    ::poll(&fd, 1, static_cast<int>(timeout.count()));
  }

  // What the table reports: its pending rows, and the dead count and oldest age the test set.
  OutboxStats stats() override {
    std::lock_guard lock(mutex_);
    OutboxStats stats;
    stats.pending = static_cast<long>(pending_.size());
    stats.dead = dead_;
    stats.oldest_pending_age_seconds = oldest_pending_age_seconds_;
    return stats;
  }
  // Sent rows are not kept here: nothing to prune (and no event noted, so the relay's own
  // schedule does not show in the event log).
  long prune_sent(std::chrono::milliseconds /*older_than*/, int /*limit*/) override { return 0; }
  void set_stats(long dead, std::optional<double> oldest_pending_age_seconds) {
    std::lock_guard lock(mutex_);
    dead_ = dead;
    oldest_pending_age_seconds_ = oldest_pending_age_seconds;
  }

  std::size_t pending() {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }

  bool fail_claims = false;
  bool fail_complete = false;
  std::vector<BatchVerdict> verdicts;
  std::atomic<int> waits_started{0};  // calls of wait_for_work, counted as they begin

 private:
  void note(const std::string& event) {
    if (events_ != nullptr)
      events_->push_back(event);
  }
  void note_locked(const std::string& event) {
    std::lock_guard lock(mutex_);
    note(event);
  }

  std::vector<std::string>* events_;
  std::mutex mutex_;
  std::vector<OutboxRow> pending_;
  std::vector<OutboxRow> claimed_;
  long dead_ = 0;
  std::optional<double> oldest_pending_age_seconds_;
};

class FakeRowPublisher final : public RowPublisher {
 public:
  explicit FakeRowPublisher(std::vector<std::string>* events) : events_(events) {}

  bool ready() const override { return is_ready; }

  std::vector<PublishOutcome> publish_all(
      const std::vector<transport::OutboundMessage>& messages) override {
    std::vector<PublishOutcome> outcomes;
    {
      std::lock_guard lock(mutex_);
      if (events_ != nullptr)
        events_->push_back("publish " + std::to_string(messages.size()));
      for (const auto& message : messages) {
        published.push_back(message);
        outcomes.push_back(verdict ? verdict(message) : PublishOutcome::confirmed());
      }
    }
    return outcomes;
  }

  std::size_t published_count() {
    std::lock_guard lock(mutex_);
    return published.size();
  }

  bool is_ready = true;
  std::function<PublishOutcome(const transport::OutboundMessage&)> verdict;
  std::vector<transport::OutboundMessage> published;

 private:
  std::vector<std::string>* events_;
  std::mutex mutex_;
};

inline std::vector<OutboxRow> make_rows(int count, const std::string& routing_key = "rk",
                                        int attempts = 0) {
  std::vector<OutboxRow> rows;
  for (int i = 0; i < count; ++i) {
    OutboxRow row;
    row.id = "row-" + std::to_string(i);
    row.message_id = "msg-" + std::to_string(i);
    row.routing_key = routing_key;
    row.payload = "payload " + std::to_string(i);
    row.headers_json = "{}";
    row.attempts = attempts;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace warren::outbox::testing
