// A SqliteTransport on a fresh file with one classic queue, a recording sink, and a connection
// of the test's own to count rows by status (as another process would see them). The engine's
// poll of the file is set to a minute: what a test sees comes from the engine's own rounds and
// its rescue timer (every second).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "config/config.h"
#include "config/routing_table.h"
#include "conformance/recording_sink.h"
#include "queue/sqlite_connection.h"
#include "queue/sqlite_transport.h"
#include "temp_dir.h"

namespace warren::transport::testing {

class SqliteTransportFixture : public ::testing::Test {
 protected:
  static constexpr const char* kQueue = "fixture.q";

  void SetUp() override {
    config::QueueConfig queue;
    queue.name = kQueue;
    queue.type = config::QueueType::classic;
    config_.queues.push_back(queue);
    config_.broker.transport = config::BrokerConfig::Transport::sqlite;
    queue::SqliteQueueOptions options;
    options.path = dir_.path() / "queue.db";
    options.poll_interval = std::chrono::minutes(1);
    options.owner = queue::lease_owner_for("fixture-host");
    transport_ =
        std::make_unique<queue::SqliteTransport>(options, config::routing_table(config_), nullptr);
  }

  void TearDown() override {
    transport_->close();
    sink_.clear();
  }

  void publish(int count) {
    for (int n = 0; n < count; ++n) {
      OutboundMessage message;
      message.routing_key = kQueue;  // the default exchange: straight to the queue
      message.message_id = "m-" + std::to_string(n);
      message.body = "body";
      transport_->publish(message);
    }
  }

  // Rows of the queue in `status`, read through a connection of the test's own.
  std::int64_t rows(const char* status) {
    if (!db_)
      db_ = std::make_unique<queue::SqliteConnection>(
          queue::SqliteOpenOptions{dir_.path() / "queue.db"});
    queue::Statement count(*db_, "SELECT count(*) FROM warren_queue WHERE status = ?1");
    count.bind(1, std::string_view(status));
    count.step();
    const std::int64_t n = count.integer(0);
    count.reset();
    return n;
  }

  test_support::TempDir dir_;
  config::Config config_;
  std::unique_ptr<queue::SqliteTransport> transport_;
  std::unique_ptr<queue::SqliteConnection> db_;
  RecordingSink sink_;
};

}  // namespace warren::transport::testing
