// The dead rows of the SQLite queue as `warren dlq` works on them (queue/sqlite_dead_rows.h): what
// next() shows of each (a page of rows at a time), how replay brings a row back to work in place,
// and how remove deletes, each on a real database file where a host's store made the rows die.
#include "queue/sqlite_dead_rows.h"

#include <gmock/gmock.h>

#include "queue/headers_json.h"
#include "queue_file_fixture.h"
#include "transport/transport.h"

namespace warren::queue::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// What `warren dlq replay` hands replay(): the row's headers minus the failure ones, plus the
// replay count.
transport::OutboundMessage replayed(const transport::DeadLetter& letter, std::string count) {
  transport::OutboundMessage copy;
  for (const auto& [name, value] : letter.message.headers) {
    if (!name.starts_with("x-warren-"))
      copy.headers.emplace_back(name, value);
  }
  copy.headers.emplace_back("x-warren-replay-count", std::move(count));
  copy.exchange = letter.original_exchange;
  copy.routing_key = letter.original_routing_key;
  return copy;
}

std::vector<std::string> ids_of(const std::vector<transport::DeadLetter>& letters) {
  std::vector<std::string> ids;
  for (const auto& letter : letters)
    ids.push_back(letter.message.message_id);
  return ids;
}

// Every dead row, as `warren dlq` reads them: one at a time, a page of rows per query.
std::vector<transport::DeadLetter> read_all(SqliteDeadRows& rows) {
  std::vector<transport::DeadLetter> letters;
  while (auto letter = rows.next())
    letters.push_back(std::move(*letter));
  return letters;
}

using SqliteDeadRowsTest = QueueFile;

TEST_F(SqliteDeadRowsTest, Fetch_OnlyTheDeadRowsOfItsQueue_OldestFirst_WithReasonAndOrigin) {
  enqueue("work", "a", {{"x-batch", "1"}}, "order.created");
  enqueue("work", "b", {}, "order.paid");
  enqueue("other", "c");
  ASSERT_EQ(kill_all("work", "std::runtime_error: bad order"), 2u);
  ASSERT_EQ(kill_all("other", "elsewhere"), 1u);
  enqueue("work", "pending");
  enqueue("work", "done");
  settle_all("work", transport::Settlement::Kind::ack);
  enqueue("work", "still-pending");

  SqliteDeadRows rows(db(), "work");
  EXPECT_EQ(rows.queue(), "work");
  EXPECT_EQ(rows.census(), "2 dead row(s) in the queue");
  const auto letters = read_all(rows);

  ASSERT_THAT(ids_of(letters), ElementsAre("a", "b"));
  const auto& a = letters[0];
  EXPECT_EQ(a.error, "std::runtime_error: bad order");
  EXPECT_EQ(a.original_exchange, "orders");
  EXPECT_EQ(a.original_routing_key, "order.created");
  EXPECT_EQ(letters[1].original_routing_key, "order.paid");
  EXPECT_EQ(a.message.body, "body of a");
  EXPECT_EQ(a.message.content_type, "application/json");
  EXPECT_EQ(a.message.queue, "work");
  EXPECT_EQ(transport::find_header(a.message.headers, "x-batch"), "1");
  EXPECT_EQ(transport::find_header(a.message.headers, "x-warren-worker"), "w");
  EXPECT_EQ(transport::find_header(a.message.headers, "x-warren-error"),
            "std::runtime_error: bad order");
  EXPECT_EQ(transport::find_header(a.message.headers, "x-warren-attempt"), "3");
}

TEST_F(SqliteDeadRowsTest, Fetch_RowThatDiedOfExpiredLeases_ShowsItsLastError) {
  enqueue("work", "crasher");
  // The lease of every claim expires, kMaxLeaseExpiries times: the host died each time.
  for (int i = 0; i < kMaxLeaseExpiries; ++i) {
    WriteTransaction transaction(db());
    // After its first expiry the row is a suspect: claimed alone (claim_suspect).
    ASSERT_EQ(store().claim("work", 10, now_ms(), 0, /*suspects=*/i > 0).size(), 1u);
    ASSERT_EQ(store().rescue(now_ms()), 1);
    transaction.commit();
  }
  ASSERT_EQ(column("work", "crasher", "status"), "dead");

  SqliteDeadRows rows(db(), "work");
  const auto letters = read_all(rows);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_THAT(letters[0].error, HasSubstr("lease expired 3 times"));
  EXPECT_EQ(transport::find_header(letters[0].message.headers, "x-warren-error"), std::nullopt);
}

TEST_F(SqliteDeadRowsTest, Fetch_RowWithNoReasonAnywhere_SaysSo) {
  enqueue("work", "x");
  kill_all("work", "reason");
  ASSERT_EQ(change("UPDATE warren_queue SET last_error = NULL, headers = '{}'"), 1);

  SqliteDeadRows rows(db(), "work");
  EXPECT_EQ(read_all(rows).at(0).error, "(no reason recorded)");
}

TEST_F(SqliteDeadRowsTest, Replay_RowIsPendingAgainInItsQueue_DueNow_AttemptsAndFailureCleared) {
  enqueue("work", "a", {{"x-batch", "1"}, {"x-warren-replay-count", "1"}});
  kill_all("work", "bad order");
  ASSERT_EQ(change("UPDATE warren_queue SET crashes = 2"), 1);

  SqliteDeadRows rows(db(), "work");
  const auto letters = read_all(rows);
  ASSERT_EQ(letters.size(), 1u);
  const std::int64_t before = now_ms();
  EXPECT_TRUE(rows.replay(letters[0], replayed(letters[0], "2")));

  EXPECT_EQ(column("work", "a", "status"), "pending");
  EXPECT_EQ(column("work", "a", "attempts"), "0");
  EXPECT_EQ(column("work", "a", "last_error"), "NULL");
  EXPECT_EQ(column("work", "a", "finished_at"), "NULL");
  EXPECT_EQ(column("work", "a", "crashes"), "0");
  EXPECT_EQ(column("work", "a", "exchange"), "orders");
  EXPECT_EQ(column("work", "a", "routing_key"), "order.new");
  EXPECT_EQ(column("work", "a", "body"), "body of a");
  EXPECT_GE(std::stoll(column("work", "a", "next_attempt_at")), before);
  EXPECT_LE(std::stoll(column("work", "a", "next_attempt_at")), now_ms());
  std::string why;
  EXPECT_THAT(*headers_from_json(column("work", "a", "headers"), why),
              ElementsAre(Pair("x-batch", "1"), Pair("x-warren-replay-count", "2")));

  // A host claims it at once, as its first attempt.
  WriteTransaction transaction(db());
  const auto claimed = store().claim("work", 10, now_ms(), now_ms() + 60000);
  transaction.commit();
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].message.message_id, "a");
  EXPECT_EQ(claimed[0].message.attempt, 1u);
  EXPECT_FALSE(claimed[0].message.redelivered);
}

TEST_F(SqliteDeadRowsTest, Replay_RowNoLongerDeadOrDeadAgainSinceFetch_IsLeftAlone) {
  enqueue("work", "replayed-elsewhere");
  enqueue("work", "died-again");
  kill_all("work", "first death");

  SqliteDeadRows stale(db(), "work");
  const auto old_view = read_all(stale);
  ASSERT_EQ(old_view.size(), 2u);
  // Another operator replays both; a host handles the first and the second dies again.
  SqliteDeadRows other(db(), "work");
  for (const auto& letter : read_all(other))
    ASSERT_TRUE(other.replay(letter, replayed(letter, "1")));
  {
    WriteTransaction transaction(db());
    const std::int64_t now = now_ms();
    for (const auto& row : store().claim("work", 10, now, now + 60000)) {
      transport::Settlement settlement;
      if (row.message.message_id == "died-again") {
        settlement.kind = transport::Settlement::Kind::dead_letter;
        settlement.reason = "second death";
      }
      ASSERT_TRUE(store().settle(row, settlement, now));
    }
    transaction.commit();
  }

  EXPECT_FALSE(stale.replay(old_view[0], replayed(old_view[0], "1")));
  EXPECT_FALSE(stale.replay(old_view[1], replayed(old_view[1], "1")));
  EXPECT_EQ(column("work", "replayed-elsewhere", "status"), "done");
  EXPECT_EQ(column("work", "died-again", "status"), "dead");
  EXPECT_EQ(column("work", "died-again", "last_error"), "second death");
  EXPECT_EQ(stale.remove(old_view), 0u);
  EXPECT_EQ(column("work", "died-again", "status"), "dead");
}

TEST_F(SqliteDeadRowsTest, Replay_RowWhoseHeadersAreNotJson_IsRefusedSayingHowToFixIt) {
  enqueue("work", "garbled");
  kill_all("work", "bad");
  ASSERT_EQ(change("UPDATE warren_queue SET headers = 'not json'"), 1);

  SqliteDeadRows rows(db(), "work");
  const auto letters = read_all(rows);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_TRUE(letters[0].message.headers.empty());
  try {
    rows.replay(letters[0], replayed(letters[0], "1"));
    FAIL() << "replayed a row whose headers cannot be read";
  } catch (const transport::PublishError& error) {
    EXPECT_THAT(error.what(), HasSubstr("not a JSON object of strings"));
    EXPECT_THAT(error.what(), HasSubstr("UPDATE warren_queue SET headers"));
  }
  EXPECT_EQ(column("work", "garbled", "status"), "dead");
  EXPECT_EQ(column("work", "garbled", "headers"), "not json");
}

TEST_F(SqliteDeadRowsTest, Remove_DeletesTheGivenDeadRowsInChunks_LeavesTheRest) {
  for (int i = 0; i < 1203; ++i)
    enqueue("work", "dead-" + std::to_string(i));
  ASSERT_EQ(kill_all("work", "bad"), 1203u);
  enqueue("work", "pending");

  SqliteDeadRows rows(db(), "work");
  auto letters = read_all(rows);
  ASSERT_EQ(letters.size(), 1203u);
  const transport::DeadLetter kept = letters.back();
  letters.pop_back();
  EXPECT_EQ(rows.remove(letters), 1202u);

  SqliteDeadRows after(db(), "work");
  EXPECT_EQ(after.census(), "1 dead row(s) in the queue");
  EXPECT_THAT(ids_of(read_all(after)), ElementsAre(kept.message.message_id));
  EXPECT_EQ(column("work", "pending", "status"), "pending");
}

}  // namespace
}  // namespace warren::queue::testing
