// orders_projection through the harness, against a real PostgreSQL (skips without one): each event
// applied exactly once however often it is delivered, poison dead-lettered, dsn required.
#include "orders_projection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "pg_test_schema.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::HasSubstr;
using warren::outbox::testing::PgTestSchema;
using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

TestMessage order_placed(int n, const std::string& customer = "c-17") {
  char id[37];
  std::snprintf(id, sizeof(id), "00000000-0000-4000-8000-%012d", n);
  TestMessage message;
  message.routing_key = "pedido.registrado";
  message.message_id = id;
  message.body = std::string("{\"event_id\": \"") + id + "\", \"order_id\": " + std::to_string(n) +
                 ", \"customer_id\": \"" + customer +
                 "\", \"total\": 20.5, \"items\": [{\"product_id\": 7, \"quantity\": 2, "
                 "\"unit_price\": 10.25}]}";
  return message;
}

class OrdersProjectionTest : public ::testing::Test {
 protected:
  Harness start() {
    return Harness::of<livraria::OrdersProjection>({{"dsn", schema_.dsn()}}, "projection");
  }
  std::string scalar(const std::string& sql) { return schema_.connect().exec(sql).text(0, 0); }

  PgTestSchema schema_;
};

TEST_F(OrdersProjectionTest, Event_IsProjectedAndRecordedInTheInboxInOneGo) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  Harness harness = start();
  const Result r = harness.deliver(order_placed(1));
  EXPECT_EQ(r.kind, Result::Kind::ack) << r;
  EXPECT_EQ(scalar("SELECT count(*) FROM orders_projection"), "1");
  EXPECT_EQ(scalar("SELECT orders || ' ' || total FROM customer_sales"), "1 20.5");
  EXPECT_EQ(scalar("SELECT worker || ' ' || message_id FROM warren_inbox"),
            "projection 00000000-0000-4000-8000-000000000001");
}

TEST_F(OrdersProjectionTest, DuplicateDeliveries_AreAckedAndAppliedOnce) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  Harness harness = start();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(harness.deliver(order_placed(1)).kind, Result::Kind::ack);
  EXPECT_EQ(scalar("SELECT orders FROM customer_sales"), "1");
  EXPECT_EQ(harness.metrics().at("warren_plugin_projection_duplicates_total").sum(), 2);
}

TEST_F(OrdersProjectionTest, ConcurrentDuplicates_AreStillAppliedOnce) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  Harness harness = start();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&harness] {
      for (int n = 1; n <= 20; ++n)
        harness.deliver(order_placed(n));
    });
  }
  for (auto& thread : threads)
    thread.join();
  // The inbox primary key serialises the racing transactions: one wins, the others see a conflict.
  EXPECT_EQ(scalar("SELECT orders FROM customer_sales"), "20");
  EXPECT_EQ(scalar("SELECT count(*) FROM orders_projection"), "20");
}

TEST_F(OrdersProjectionTest, MalformedEvent_IsDeadLetteredAndLeavesNoTrace) {
  PG_TEST_SCHEMA_OR_SKIP(schema_);
  Harness harness = start();
  TestMessage message = order_placed(1);
  message.body = "{not json";
  EXPECT_EQ(harness.deliver(message).kind, Result::Kind::dead_letter);
  EXPECT_EQ(scalar("SELECT count(*) FROM warren_inbox"), "0");
}

TEST(OrdersProjectionSettings, MissingDsn_IsRefusedSayingWhatToSet) {
  try {
    Harness::of<livraria::OrdersProjection>({}, "projection");
    FAIL() << "expected the constructor to refuse";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'dsn' is required"));
  }
}

}  // namespace
