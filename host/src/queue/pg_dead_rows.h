// The dead rows of one queue in the PostgreSQL table queue, for `warren dlq`
// (transport/dead_letters.h); the twin of queue/sqlite_dead_rows.h.
//
// A dead letter here is a row with status 'dead'; it never left the table. replay() puts it back
// to work in place, in the worker's own queue: status 'pending', attempts 0, due now, lease and
// crash count cleared, its headers replaced by the replay's (the x-warren-* failure headers
// dropped, x-warren-replay-count + 1); exchange, routing key, id and body stay. One statement
// (its own transaction) per row, fenced by the row's lease_token as it was read, so that a row
// that was replayed, failed and died again meanwhile is not touched by a stale view of it; the
// same statement notifies warren_queue, so that the hosts claim it at once. remove() deletes rows
// in statements of a few hundred.
//
// Reading holds nothing (no lock, no open transaction): running hosts go on while the rows are
// looked at, and keep() has nothing to do. Rows are read a page at a time, in id order.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "postgres/pg_connection.h"
#include "transport/dead_letters.h"

namespace warren::queue {

class PgDeadRows final : public transport::DeadLetters {
 public:
  // The dead rows of `queue` in the warren_queue of `connection`'s search_path
  // (use_pg_queue_schema); the connection outlives this. Throws postgres::PgError.
  PgDeadRows(postgres::PgConnection& connection, std::string queue);

  const std::string& queue() const override { return queue_; }
  std::string census() const override;
  std::optional<transport::DeadLetter> next() override;
  void keep(const transport::DeadLetter& letter) override;
  bool replays_into_worker_queue_only() const override { return true; }
  bool replay(const transport::DeadLetter& letter, const transport::OutboundMessage& copy) override;
  std::size_t remove(const std::vector<transport::DeadLetter>& letters) override;

 private:
  struct Fetched {
    std::string token;       // lease_token as read, as text (a statement parameter)
    std::string unreadable;  // not empty: why its headers could not be read
  };
  const Fetched& fetched(const transport::DeadLetter& letter) const;
  void read_page();

  postgres::PgConnection& connection_;
  const std::string queue_;
  std::int64_t dead_count_ = 0;
  std::map<std::uint64_t, Fetched> fetched_;  // by row id: read, not yet settled
  std::deque<transport::DeadLetter> page_;    // read, not yet handed out
  std::uint64_t last_id_ = 0;
  bool exhausted_ = false;
};

}  // namespace warren::queue
