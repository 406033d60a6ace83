// warren_publish() and the insert trigger of sql/postgres_queue.sql on a real server: the SQL
// function routes exactly as transport::RoutingTable::route does (the routing that
// store_pg_routing stored), each reached queue gets one row, a duplicate message id is ignored,
// inserts notify the hosts once per queue at commit, and a rolled-back transaction enqueues
// nothing and wakes nobody.
#include <poll.h>

#include <gmock/gmock.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pg_queue_fixture.h"
#include "postgres/pg_array.h"
#include "queue/headers_json.h"
#include "queue/pg_queue_routing.h"
#include "transport/routing.h"

namespace warren::queue::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using transport::ExchangeType;

// Every exchange type, with the edge cases of each: a queue bound twice, x- arguments, empty
// patterns and keys, a headers binding with no argument to compare. The queues' names start with
// `p` (the test's schema): notifications carry them, and every schema's inserts notify the same
// channel of the database.
transport::RoutingTable routing(const std::string& p) {
  transport::RoutingTable table;
  for (const char* queue : {"a", "b", "c", "d", "work.x"})
    table.add_queue(p + queue);
  table.add_exchange("topic", ExchangeType::topic);
  table.add_exchange("direct", ExchangeType::direct);
  table.add_exchange("fanout", ExchangeType::fanout);
  table.add_exchange("hdr", ExchangeType::headers);
  table.add_exchange("empty", ExchangeType::direct);
  for (const auto& [queue, pattern] :
       std::vector<std::pair<std::string, std::string>>{{"a", "order.*"},
                                                        {"b", "order.#"},
                                                        {"c", "#"},
                                                        {"d", "*.created"},
                                                        {"a", "#.urgent"},
                                                        {"b", ""},
                                                        {"work.x", "a.#.b"}})
    table.add_binding("topic", {p + queue, pattern, {}});
  table.add_binding("direct", {p + "b", "k", {}});
  table.add_binding("direct", {p + "a", "k", {}});
  table.add_binding("direct", {p + "c", "other", {}});
  table.add_binding("direct", {p + "b", "k", {}});
  table.add_binding("fanout", {p + "c", "ignored", {}});
  table.add_binding("fanout", {p + "b", "", {}});
  table.add_binding("hdr",
                    {p + "a", "", {{"x-match", "all"}, {"type", "order"}, {"region", "eu"}}});
  table.add_binding("hdr",
                    {p + "b", "", {{"x-match", "any"}, {"type", "order"}, {"region", "eu"}}});
  table.add_binding("hdr", {p + "c", "", {}});                    // all of nothing: everything
  table.add_binding("hdr", {p + "d", "", {{"x-match", "any"}}});  // any of nothing: nothing
  table.add_binding("hdr", {p + "work.x", "", {{"x-extra", "1"}, {"type", "invoice"}}});
  return table;
}

struct Case {
  std::string exchange;
  std::string routing_key;
  transport::TextHeaders headers;
};

std::vector<Case> cases(const std::string& p) {
  std::vector<Case> all;
  for (const std::string& key : {p + "a", p + "work.x", std::string("nope"), std::string()})
    all.push_back({"", key, {}});
  for (const char* key : {"order.created", "order", "order.created.urgent", "", "x.created",
                          "urgent", "a.b", "a.x.y.b", "order..", ".", "a.b.c", "order.a.b"})
    all.push_back({"topic", key, {}});
  for (const char* key : {"k", "other", "K", ""})
    all.push_back({"direct", key, {}});
  for (const char* key : {"anything", ""})
    all.push_back({"fanout", key, {}});
  for (const transport::TextHeaders& headers :
       std::vector<transport::TextHeaders>{{{"type", "order"}, {"region", "eu"}},
                                           {{"type", "order"}},
                                           {},
                                           {{"region", "us"}},
                                           {{"type", "order"}, {"region", "eu"}, {"extra", "x"}},
                                           {{"type", "invoice"}},
                                           {{"x-match", "any"}, {"region", "eu"}}})
    all.push_back({"hdr", "", headers});
  all.push_back({"empty", "k", {}});
  return all;
}

class PgPublishTest : public PgQueue {
 protected:
  void SetUp() override {
    PgQueue::SetUp();
    if (available())
      store_pg_routing(db(), schema(), routing(q("")));
  }

  // The name of this test's queue `name`.
  std::string q(const std::string& name) const { return schema() + "." + name; }

  // warren_publish's answer: how many queues it reached.
  int publish(const Case& c, const std::optional<std::string>& message_id,
              postgres::PgConnection* on = nullptr) {
    auto& connection = on != nullptr ? *on : db();
    const auto reached = connection.exec_params(
        "SELECT " + schema() + ".warren_publish($1, $2, $3::bytea, $4::jsonb, $5)",
        {c.exchange, c.routing_key, "\\x00ff", headers_to_json(c.headers), message_id});
    return std::stoi(reached.text(0, 0));
  }

  // The queues of the rows with this message id, in the order they were inserted.
  std::vector<std::string> queues_of(const std::string& message_id) {
    const auto rows = db().exec_params(
        "SELECT queue FROM warren_queue WHERE message_id = $1 ORDER BY id", {message_id});
    std::vector<std::string> queues;
    for (int row = 0; row < rows.rows(); ++row)
      queues.push_back(rows.text(row, 0));
    return queues;
  }
};

TEST_F(PgPublishTest, TopicPatterns_MatchAsTheHostMatchesThem) {
  PG_QUEUE_OR_SKIP();
  const std::vector<std::string> patterns{
      "",      "#",     "*",       "#.#",   "*.#",  "#.*", "a",  "a.*", "a.#", "#.a",   "*.a",
      "a.#.b", "a.*.b", "a.#.#.b", "#.a.#", "a..b", ".",   "a.", ".a",  "*.*", "#.*.#", "*.*.*"};
  const std::vector<std::string> keys{"",        "a",    "b",     "a.b",   "a.a",  "a.x.b",
                                      "a.x.y.b", "a..b", ".",     "a.",    ".a",   "x.a.y",
                                      "#",       "*",    "a.b.c", "b.a.b", "a.b.a"};
  const auto rows = db().exec_params(
      "SELECT p, k, warren_topic_matches(p, k) FROM unnest($1::text[]) AS p, "
      "unnest($2::text[]) AS k",
      {postgres::pg_array_literal(patterns), postgres::pg_array_literal(keys)});
  ASSERT_EQ(rows.rows(), static_cast<int>(patterns.size() * keys.size()));
  int disagreements = 0;
  for (int row = 0; row < rows.rows(); ++row) {
    const std::string pattern = rows.text(row, 0);
    const std::string key = rows.text(row, 1);
    const bool in_sql = rows.value(row, 2) == "t";
    if (in_sql != transport::topic_matches(pattern, key)) {
      ++disagreements;
      ADD_FAILURE() << "pattern '" << pattern << "', key '" << key << "': SQL says " << in_sql;
    }
  }
  EXPECT_EQ(disagreements, 0);
}

TEST_F(PgPublishTest, EveryCase_ReachesTheQueuesRoutingTableRouteReaches) {
  PG_QUEUE_OR_SKIP();
  const auto table = routing(q(""));
  int n = 0;
  for (const auto& c : cases(q(""))) {
    const std::string id = "case-" + std::to_string(n++);
    const auto expected = table.route(c.exchange, c.routing_key, c.headers);
    ASSERT_TRUE(expected) << c.exchange;
    EXPECT_EQ(publish(c, id), static_cast<int>(expected->size()))
        << "exchange '" << c.exchange << "', key '" << c.routing_key << "', headers "
        << headers_to_json(c.headers);
    EXPECT_EQ(queues_of(id), *expected) << "exchange '" << c.exchange << "', key '" << c.routing_key
                                        << "', headers " << headers_to_json(c.headers);
  }
}

TEST_F(PgPublishTest, UnknownExchange_RaisesNamingItAndInsertsNothing) {
  PG_QUEUE_OR_SKIP();
  ASSERT_FALSE(routing(q("")).route("nope", "k", {}));
  try {
    publish({"nope", "k", {}}, "m");
    FAIL() << "an unknown exchange was accepted";
  } catch (const postgres::PgError& error) {
    EXPECT_EQ(error.sqlstate(), "42704");
    EXPECT_THAT(error.what(), HasSubstr("no exchange 'nope'"));
  }
  EXPECT_EQ(count(), 0);
}

TEST_F(PgPublishTest, DuplicateMessageId_IsIgnoredInEveryQueue) {
  PG_QUEUE_OR_SKIP();
  EXPECT_EQ(publish({"direct", "k", {}}, "dup"), 2);
  EXPECT_EQ(publish({"direct", "k", {}}, "dup"), 2);  // reached, and nothing new inserted
  EXPECT_EQ(publish({"", q("a"), {}}, "dup"), 1);
  EXPECT_THAT(queues_of("dup"), ElementsAre(q("b"), q("a")));

  // A plain INSERT: ignored with ON CONFLICT DO NOTHING, an error without it.
  const std::string insert = "INSERT INTO warren_queue (queue, message_id) VALUES ($1, 'dup')";
  EXPECT_EQ(db().exec_params(insert + " ON CONFLICT (queue, message_id) DO NOTHING", {q("a")})
                .affected_rows(),
            0);
  try {
    db().exec_params(insert, {q("a")});
    FAIL() << "a duplicate was inserted";
  } catch (const postgres::PgError& error) {
    EXPECT_EQ(error.sqlstate(), "23505");
  }
  EXPECT_EQ(count("message_id = 'dup'"), 2);
}

TEST_F(PgPublishTest, NoMessageId_EveryCopyGetsTheSameFreshOne) {
  PG_QUEUE_OR_SKIP();
  EXPECT_EQ(publish({"fanout", "x", {}}, std::nullopt), 2);
  EXPECT_EQ(publish({"fanout", "x", {}}, std::nullopt), 2);
  const auto ids = db().exec(
      "SELECT message_id, count(*), string_agg(queue, ',' ORDER BY id) FROM warren_queue "
      "GROUP BY message_id ORDER BY min(id)");
  ASSERT_EQ(ids.rows(), 2);
  for (int row = 0; row < 2; ++row) {
    EXPECT_THAT(ids.text(row, 0), ::testing::MatchesRegex("[0-9a-f]{32}"));
    EXPECT_EQ(ids.text(row, 2), q("c") + "," + q("b"));
  }
}

TEST_F(PgPublishTest, StoredColumns_AreThePublishedMessage) {
  PG_QUEUE_OR_SKIP();
  db().exec(
      "SELECT warren_publish('direct', 'other', '\\x00ff'::bytea, '{\"source\": \"api\"}', "
      "'m-1', content_type => 'application/json')");
  const auto row = db().exec(
      "SELECT queue, exchange, routing_key, content_type, headers::text, encode(body, 'hex'), "
      "status, attempts FROM warren_queue WHERE message_id = 'm-1'");
  ASSERT_EQ(row.rows(), 1);
  EXPECT_EQ(row.text(0, 0), q("c"));
  EXPECT_EQ(row.text(0, 1), "direct");
  EXPECT_EQ(row.text(0, 2), "other");
  EXPECT_EQ(row.text(0, 3), "application/json");
  EXPECT_EQ(row.text(0, 4), "{\"source\": \"api\"}");
  EXPECT_EQ(row.text(0, 5), "00ff");
  EXPECT_EQ(row.text(0, 6), "pending");
  EXPECT_EQ(row.text(0, 7), "0");
}

TEST_F(PgPublishTest, CalledWithAnotherSearchPath_RoutesIntoItsOwnSchema) {
  PG_QUEUE_OR_SKIP();
  auto application = connect();  // search_path: the server's default
  EXPECT_EQ(publish({"topic", "order.created", {}}, "elsewhere", &application), 4);
  EXPECT_EQ(count("message_id = 'elsewhere'"), 4);
}

// The payloads (queue names) of the notifications on channel warren_queue for this test's
// queues that `listener` receives before a sentinel sent after them by `writer`: notifications
// arrive in commit order, so once the sentinel is here, every notification of the commits before
// it is too (no sleep, no guessing). Other tests' inserts notify the same channel of the database:
// their queues and sentinels are told apart by name.
class PgNotifyTest : public PgPublishTest {
 protected:
  std::vector<std::string> notified_before_sentinel(postgres::PgConnection& listener,
                                                    postgres::PgConnection& writer) {
    const std::string sentinel = q("sentinel-" + std::to_string(++sentinels_));
    writer.exec_params("SELECT pg_notify('warren_test_sentinel', $1)", {sentinel});
    std::vector<std::string> seen;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd readable{listener.socket(), POLLIN, 0};
      ::poll(&readable, 1, 100);
      listener.consume_input();
      for (auto& notification : listener.take_notifications_with_payloads()) {
        if (notification.channel == "warren_test_sentinel" && notification.payload == sentinel)
          return seen;
        if (notification.channel == "warren_queue" && notification.payload.starts_with(q("")))
          seen.push_back(std::move(notification.payload));
      }
    }
    ADD_FAILURE() << "the sentinel notification never arrived";
    return seen;
  }

 private:
  int sentinels_ = 0;
};

TEST_F(PgNotifyTest, Inserts_NotifyOncePerQueueAtCommitAndNotBefore) {
  PG_QUEUE_OR_SKIP();
  auto listener = connect();
  listener.exec("LISTEN warren_queue");
  listener.exec("LISTEN warren_test_sentinel");
  auto writer = connect();
  writer.exec("SET search_path TO " + schema());

  writer.exec("BEGIN");
  writer.exec_params("INSERT INTO warren_queue (queue) SELECT $1 FROM generate_series(1, 500)",
                     {q("a")});
  writer.exec_params("INSERT INTO warren_queue (queue) VALUES ($1), ($1), ($2)", {q("b"), q("a")});
  auto other = connect();
  EXPECT_THAT(notified_before_sentinel(listener, other), ElementsAre())
      << "notified before the commit";
  writer.exec("COMMIT");
  EXPECT_THAT(notified_before_sentinel(listener, writer),
              ::testing::UnorderedElementsAre(q("a"), q("b")))
      << "one per queue, not one per row";

  // A statement that inserted nothing (a duplicate) wakes nobody.
  const std::string insert_once =
      "INSERT INTO warren_queue (queue, message_id) VALUES ($1, 'once')";
  writer.exec_params(insert_once, {q("c")});
  EXPECT_THAT(notified_before_sentinel(listener, writer), ElementsAre(q("c")));
  writer.exec_params(insert_once + " ON CONFLICT (queue, message_id) DO NOTHING", {q("c")});
  EXPECT_THAT(notified_before_sentinel(listener, writer), ElementsAre());
}

TEST_F(PgNotifyTest, RolledBackTransaction_EnqueuesNothingAndWakesNobody) {
  PG_QUEUE_OR_SKIP();
  auto listener = connect();
  listener.exec("LISTEN warren_queue");
  listener.exec("LISTEN warren_test_sentinel");
  auto application = connect();
  application.exec("BEGIN");
  EXPECT_EQ(publish({"topic", "order.created", {}}, "rolled-back", &application), 4);
  application.exec_params("INSERT INTO " + schema() + ".warren_queue (queue) VALUES ($1)",
                          {q("a")});
  application.exec("ROLLBACK");
  EXPECT_EQ(count(), 0);
  EXPECT_THAT(notified_before_sentinel(listener, application), ElementsAre());
  // The same transaction committed wakes the hosts: the check above could have seen it.
  application.exec("BEGIN");
  publish({"topic", "order.created", {}}, "committed", &application);
  application.exec("COMMIT");
  EXPECT_THAT(notified_before_sentinel(listener, application),
              ::testing::UnorderedElementsAre(q("a"), q("b"), q("c"), q("d")));
}

}  // namespace
}  // namespace warren::queue::testing
