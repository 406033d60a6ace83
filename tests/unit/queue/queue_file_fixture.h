// A real queue database in a fresh directory, and the ways rows get into it and die there the
// way a running host does it (SqliteQueueStore: insert, claim, settle), for the tests of the
// command line's views of the SQLite queue (dead rows, census, backup).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "queue/sqlite_connection.h"
#include "queue/sqlite_queue_store.h"
#include "queue/sqlite_schema.h"
#include "temp_dir.h"
#include "transport/settlement.h"

namespace warren::queue::testing {

class QueueFile : public ::testing::Test {
 protected:
  QueueFile() {
    SqliteOpenOptions options;
    options.path = path();
    db_ = std::make_unique<SqliteConnection>(options);
    ensure_sqlite_schema(*db_);
    store_ = std::make_unique<SqliteQueueStore>(*db_, "test-host/1");
  }

  std::filesystem::path path() const { return dir_.path() / "queue.db"; }
  SqliteConnection& db() { return *db_; }

  // One pending row of `queue`, published to exchange "orders" with `routing_key`.
  void enqueue(const std::string& queue, const std::string& id, transport::TextHeaders headers = {},
               const std::string& routing_key = "order.new") {
    transport::OutboundMessage message;
    message.exchange = "orders";
    message.routing_key = routing_key;
    message.body = "body of " + id;
    message.content_type = "application/json";
    message.headers = std::move(headers);
    store_->insert(queue, message, id, now_ms());
  }

  // Claims every ready row of `queue` and settles each with `kind` (dead_letter: `reason`, as
  // worker "w" at attempt 3). Returns how many.
  std::size_t settle_all(const std::string& queue, transport::Settlement::Kind kind,
                         const std::string& reason = "") {
    WriteTransaction transaction(*db_);
    const std::int64_t now = now_ms();
    const auto rows = store_->claim(queue, 100000, now, now + 60000);
    for (const auto& row : rows) {
      transport::Settlement settlement;
      settlement.kind = kind;
      settlement.reason = reason;
      settlement.worker = "w";
      settlement.attempt = 3;
      settlement.next_attempt = 4;
      settlement.delay = std::chrono::hours(1);
      EXPECT_TRUE(store_->settle(row, settlement, now));
    }
    transaction.commit();
    return rows.size();
  }
  std::size_t kill_all(const std::string& queue, const std::string& reason) {
    return settle_all(queue, transport::Settlement::Kind::dead_letter, reason);
  }

  // One column of the row with message id `id` in `queue`, as text ("NULL" for NULL).
  std::string column(const std::string& queue, const std::string& id, const std::string& name) {
    Statement select(*db_, "SELECT " + name +
                               " FROM warren_queue WHERE queue = ?1 AND "
                               "message_id = ?2");
    select.bind(1, std::string_view(queue)).bind(2, std::string_view(id));
    EXPECT_TRUE(select.step()) << "no row " << id << " in " << queue;
    const std::string value = select.is_null(0) ? "NULL" : select.text(0);
    select.reset();
    return value;
  }
  // Runs one statement (an UPDATE another program might make); returns the rows it changed.
  int change(const std::string& sql) {
    Statement statement(*db_, sql);
    return statement.run();
  }

  SqliteQueueStore& store() { return *store_; }

 private:
  test_support::TempDir dir_ = test_support::TempDir::in_memory();
  std::unique_ptr<SqliteConnection> db_;
  std::unique_ptr<SqliteQueueStore> store_;
};

}  // namespace warren::queue::testing
