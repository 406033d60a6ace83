// See sqlite_dead_rows.h.
#include "queue/sqlite_dead_rows.h"

#include <algorithm>

#include "queue/headers_json.h"
#include "queue/sqlite_queue_store.h"
#include "transport/transport.h"

namespace warren::queue {
namespace {

// Rows read per query: what `dlq peek --limit 3` holds in memory at most.
constexpr std::int64_t kReadPage = 100;
// Rows deleted per transaction: short enough that a running host's claims wait little.
constexpr std::size_t kRemoveChunk = 500;

constexpr const char* kCountDead =
    "SELECT count(*) FROM warren_queue WHERE queue = ?1 AND status = 'dead'";
constexpr const char* kSelectDead =
    "SELECT id, lease_token, message_id, exchange, routing_key, content_type, headers, body, "
    "attempts, last_error, queue FROM warren_queue WHERE queue = ?1 AND status = 'dead' "
    "AND id > ?2 ORDER BY id LIMIT ?3";
constexpr const char* kReplay =
    "UPDATE warren_queue SET status = 'pending', attempts = 0, next_attempt_at = ?3, "
    "headers = ?4, last_error = NULL, finished_at = NULL, lease_owner = NULL, "
    "lease_until = NULL, redelivered = 0, crashes = 0 "
    "WHERE id = ?1 AND lease_token = ?2 AND status = 'dead'";
constexpr const char* kDelete =
    "DELETE FROM warren_queue WHERE id = ?1 AND lease_token = ?2 AND status = 'dead'";

// Why the row died: its last_error (set by every way a row dies), else the x-warren-error
// header, as on RabbitMQ.
std::string error_of(const Statement& row, int last_error_column,
                     const transport::InboundMessage& message) {
  if (!row.is_null(last_error_column)) {
    std::string error = row.text(last_error_column);
    if (!error.empty())
      return error;
  }
  if (auto error = transport::find_header(message.headers, "x-warren-error"))
    return std::string(*error);
  return "(no reason recorded)";
}

}  // namespace

SqliteDeadRows::SqliteDeadRows(SqliteConnection& connection, std::string queue)
    : connection_(connection), queue_(std::move(queue)) {
  Statement count(connection_, kCountDead);
  count.bind(1, std::string_view(queue_));
  count.step();
  dead_count_ = count.integer(0);
  count.reset();
}

std::string SqliteDeadRows::census() const {
  return std::to_string(dead_count_) + " dead row(s) in the queue";
}

std::optional<transport::DeadLetter> SqliteDeadRows::next() {
  if (page_.empty() && !exhausted_)
    read_page();
  if (page_.empty())
    return std::nullopt;
  transport::DeadLetter letter = std::move(page_.front());
  page_.pop_front();
  return letter;
}

void SqliteDeadRows::read_page() {
  Statement rows(connection_, kSelectDead);
  rows.bind(1, std::string_view(queue_)).bind(2, last_id_).bind(3, kReadPage);
  std::int64_t count = 0;
  while (rows.step()) {
    ++count;
    transport::DeadLetter letter;
    const std::int64_t id = rows.integer(0);
    last_id_ = id;
    letter.handle = static_cast<std::uint64_t>(id);
    Fetched& seen = fetched_[letter.handle];
    seen.token = rows.integer(1);
    auto& message = letter.message;
    message.message_id = rows.text(2);
    message.exchange = rows.text(3);
    message.routing_key = rows.text(4);
    message.content_type = rows.text(5);
    if (auto headers = headers_from_json(rows.text(6), seen.unreadable))
      message.headers = std::move(*headers);
    message.body = rows.blob(7);
    message.attempt = static_cast<std::uint32_t>(std::max<std::int64_t>(rows.integer(8), 0));
    message.queue = rows.text(10);
    letter.error = error_of(rows, 9, message);
    letter.original_exchange = message.exchange;
    letter.original_routing_key = message.routing_key;
    page_.push_back(std::move(letter));
  }
  exhausted_ = count < kReadPage;
}

void SqliteDeadRows::keep(const transport::DeadLetter& letter) {
  // Reading took nothing out of the table. Forgotten, so that a browse holds no more than a page;
  // a row replayed or removed stays known (a small entry, no body): settling it again must
  // still find that it is no longer dead.
  fetched_.erase(letter.handle);
}

const SqliteDeadRows::Fetched& SqliteDeadRows::fetched(const transport::DeadLetter& letter) const {
  const auto found = fetched_.find(letter.handle);
  if (found == fetched_.end()) {
    throw transport::TransportError("row " + std::to_string(letter.handle) + " of queue '" +
                                    queue_ + "' was not fetched from '" +
                                    connection_.path().string() + "'");
  }
  return found->second;
}

bool SqliteDeadRows::replay(const transport::DeadLetter& letter,
                            const transport::OutboundMessage& copy) {
  const Fetched& row = fetched(letter);
  const std::string where = "row " + std::to_string(letter.handle) + " of queue '" + queue_ +
                            "' in '" + connection_.path().string() + "'";
  if (!row.unreadable.empty()) {
    throw transport::PublishError(
        transport::PublishError::Reason::unavailable,
        where + " has headers that are not a JSON object of strings (" + row.unreadable +
            "): correct them (UPDATE warren_queue SET headers = '{...}' WHERE id = " +
            std::to_string(letter.handle) + "), then replay it");
  }
  try {
    WriteTransaction transaction(connection_);
    Statement replay(connection_, kReplay);
    const int changed = replay.bind(1, static_cast<std::int64_t>(letter.handle))
                            .bind(2, row.token)
                            .bind(3, now_ms())
                            .bind(4, std::string_view(headers_to_json(copy.headers)))
                            .run();
    transaction.commit();
    return changed > 0;
  } catch (const SqliteError& error) {
    throw transport::PublishError(transport::PublishError::Reason::unavailable,
                                  where + " could not be set back to pending: " + error.what());
  }
}

std::size_t SqliteDeadRows::remove(const std::vector<transport::DeadLetter>& letters) {
  std::size_t removed = 0;
  try {
    Statement remove(connection_, kDelete);
    for (std::size_t first = 0; first < letters.size(); first += kRemoveChunk) {
      const std::size_t last = std::min(letters.size(), first + kRemoveChunk);
      WriteTransaction transaction(connection_);
      std::size_t in_chunk = 0;
      for (std::size_t i = first; i < last; ++i) {
        const Fetched& row = fetched(letters[i]);
        in_chunk += static_cast<std::size_t>(
            remove.bind(1, static_cast<std::int64_t>(letters[i].handle)).bind(2, row.token).run());
      }
      transaction.commit();
      removed += in_chunk;
    }
  } catch (const SqliteError& error) {
    throw transport::TransportError("deleting dead rows of queue '" + queue_ + "' in '" +
                                    connection_.path().string() + "' stopped after " +
                                    std::to_string(removed) + ": " + error.what());
  }
  return removed;
}

}  // namespace warren::queue
