// See pg_dead_rows.h.
#include "queue/pg_dead_rows.h"

#include <algorithm>
#include <cstdlib>

#include "postgres/pg_array.h"
#include "queue/headers_json.h"
#include "transport/transport.h"

namespace warren::queue {
namespace {

// Rows read per query: what `dlq peek --limit 3` holds in memory at most.
constexpr int kReadPage = 100;
// Rows deleted per statement: short enough that running hosts' claims wait little.
constexpr std::size_t kRemoveChunk = 500;

constexpr const char* kCountDead =
    "SELECT count(*) FROM warren_queue WHERE queue = $1 AND status = 'dead'";
// Binary results, for the body; every other column as text (text's binary form is its text).
// The casts are renamed: `id::text` would be an output column named id, which ORDER BY id
// would sort as text.
constexpr const char* kSelectDead =
    "SELECT id::text AS row_id, lease_token::text AS token, message_id, exchange, routing_key, "
    "content_type, headers::text AS header_json, body, attempts::text AS failed_attempts, "
    "last_error, queue FROM warren_queue "
    "WHERE queue = $1 AND status = 'dead' AND id > $2::bigint ORDER BY id LIMIT $3::integer";
constexpr const char* kReplay =
    "WITH replayed AS (UPDATE warren_queue SET status = 'pending', attempts = 0, "
    "next_attempt_at = now(), headers = $3::jsonb, last_error = NULL, finished_at = NULL, "
    "lease_owner = NULL, lease_until = NULL, redelivered = false, crashes = 0 "
    "WHERE id = $1::bigint AND lease_token = $2::bigint AND status = 'dead' RETURNING queue) "
    "SELECT pg_notify('warren_queue', queue) FROM replayed";
constexpr const char* kDelete =
    "DELETE FROM warren_queue AS q USING unnest($1::bigint[], $2::bigint[]) AS d(id, token) "
    "WHERE q.id = d.id AND q.lease_token = d.token AND q.status = 'dead'";

std::uint64_t as_uint64(std::string_view text) {
  return std::strtoull(std::string(text).c_str(), nullptr, 10);
}

// Why the row died: its last_error (set by every way a row dies), else the x-warren-error
// header, as on RabbitMQ.
std::string error_of(const postgres::PgResult& rows, int row, int last_error_column,
                     const transport::InboundMessage& message) {
  if (!rows.is_null(row, last_error_column) && !rows.value(row, last_error_column).empty())
    return rows.text(row, last_error_column);
  if (auto error = transport::find_header(message.headers, "x-warren-error"))
    return std::string(*error);
  return "(no reason recorded)";
}

}  // namespace

PgDeadRows::PgDeadRows(postgres::PgConnection& connection, std::string queue)
    : connection_(connection), queue_(std::move(queue)) {
  const auto count = connection_.exec_params(kCountDead, {queue_});
  dead_count_ = std::strtoll(count.text(0, 0).c_str(), nullptr, 10);
}

std::string PgDeadRows::census() const {
  return std::to_string(dead_count_) + " dead row(s) in the queue";
}

std::optional<transport::DeadLetter> PgDeadRows::next() {
  if (page_.empty() && !exhausted_)
    read_page();
  if (page_.empty())
    return std::nullopt;
  transport::DeadLetter letter = std::move(page_.front());
  page_.pop_front();
  return letter;
}

void PgDeadRows::read_page() {
  const auto rows = connection_.exec_params(
      kSelectDead, {queue_, std::to_string(last_id_), std::to_string(kReadPage)},
      /*binary_results=*/true);
  for (int row = 0; row < rows.rows(); ++row) {
    transport::DeadLetter letter;
    letter.handle = as_uint64(rows.value(row, 0));
    last_id_ = letter.handle;
    Fetched& seen = fetched_[letter.handle];
    seen.token = rows.text(row, 1);
    auto& message = letter.message;
    message.message_id = rows.text(row, 2);
    message.exchange = rows.text(row, 3);
    message.routing_key = rows.text(row, 4);
    message.content_type = rows.text(row, 5);
    // jsonb::text is one JSON document; its binary form would carry a version byte.
    if (auto headers = headers_from_json(rows.value(row, 6), seen.unreadable))
      message.headers = std::move(*headers);
    message.body = rows.text(row, 7);
    message.attempt = static_cast<std::uint32_t>(
        std::max<long long>(std::strtoll(rows.text(row, 8).c_str(), nullptr, 10), 0));
    message.queue = rows.text(row, 10);
    letter.error = error_of(rows, row, 9, message);
    letter.original_exchange = message.exchange;
    letter.original_routing_key = message.routing_key;
    page_.push_back(std::move(letter));
  }
  exhausted_ = rows.rows() < kReadPage;
}

void PgDeadRows::keep(const transport::DeadLetter& letter) {
  // Reading took nothing out of the table. Forgotten, so that a browse holds no more than a page;
  // a row replayed or removed stays known (a small entry, no body): settling it again must
  // still find that it is no longer dead.
  fetched_.erase(letter.handle);
}

const PgDeadRows::Fetched& PgDeadRows::fetched(const transport::DeadLetter& letter) const {
  const auto found = fetched_.find(letter.handle);
  if (found == fetched_.end()) {
    throw transport::TransportError("row " + std::to_string(letter.handle) + " of queue '" +
                                    queue_ + "' was not fetched from " + connection_.describe());
  }
  return found->second;
}

bool PgDeadRows::replay(const transport::DeadLetter& letter,
                        const transport::OutboundMessage& copy) {
  const Fetched& row = fetched(letter);
  const std::string where = "row " + std::to_string(letter.handle) + " of queue '" + queue_ +
                            "' in " + connection_.describe();
  if (!row.unreadable.empty()) {
    throw transport::PublishError(
        transport::PublishError::Reason::unavailable,
        where + " has headers that are not a JSON object of strings (" + row.unreadable +
            "): correct them (UPDATE warren_queue SET headers = '{...}' WHERE id = " +
            std::to_string(letter.handle) + "), then replay it");
  }
  try {
    const auto replayed = connection_.exec_params(
        kReplay, {std::to_string(letter.handle), row.token, headers_to_json(copy.headers)});
    return replayed.rows() > 0;
  } catch (const postgres::PgError& error) {
    throw transport::PublishError(transport::PublishError::Reason::unavailable,
                                  where + " could not be set back to pending: " + error.what());
  }
}

std::size_t PgDeadRows::remove(const std::vector<transport::DeadLetter>& letters) {
  std::size_t removed = 0;
  try {
    for (std::size_t first = 0; first < letters.size(); first += kRemoveChunk) {
      const std::size_t last = std::min(letters.size(), first + kRemoveChunk);
      std::vector<std::string> ids;
      std::vector<std::string> tokens;
      for (std::size_t i = first; i < last; ++i) {
        ids.push_back(std::to_string(letters[i].handle));
        tokens.push_back(fetched(letters[i]).token);
      }
      const auto deleted = connection_.exec_params(
          kDelete, {postgres::pg_array_literal(ids), postgres::pg_array_literal(tokens)});
      removed += static_cast<std::size_t>(deleted.affected_rows());
    }
  } catch (const postgres::PgError& error) {
    throw transport::TransportError("deleting dead rows of queue '" + queue_ + "' in " +
                                    connection_.describe() + " stopped after " +
                                    std::to_string(removed) + ": " + error.what());
  }
  return removed;
}

}  // namespace warren::queue
