// PgInboxStore against a real PostgreSQL: two deliveries of one message id handled at the same
// moment (two handler threads of one host, or two hosts) run the handler once, not twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "outbox/pg_inbox_store.h"
#include "pg_test_schema.h"

namespace warren::outbox {
namespace {

using namespace std::chrono_literals;

transport::InboundMessage message(const std::string& id) {
  transport::InboundMessage m;
  m.message_id = id;
  return m;
}

// What the dispatcher does with a delivery of an idempotent worker: claim, run, record.
void handle_once(PgInboxStore& store, const transport::InboundMessage& m,
                 const std::function<void()>& handler) {
  auto claim = store.claim(m);
  if (claim == nullptr)
    return;  // a duplicate
  handler();
  claim->processed();
}

TEST(PgInboxClaim, DuplicatesDeliveredAtTheSameMoment_RunTheHandlerOnce) {
  testing::PgTestSchema schema;
  PG_TEST_SCHEMA_OR_SKIP(schema);
  PgInboxStoreOptions options;
  options.worker = "emails";
  options.dsn = schema.dsn();
  options.retention = 1h;
  // Two hosts, two handler threads each: every thread gets a copy of each message at once.
  PgInboxStore host_a(options);
  PgInboxStore host_b(options);
  PgInboxStore* const stores[] = {&host_a, &host_a, &host_b, &host_b};
  constexpr int kThreads = 4;
  constexpr int kMessages = 100;

  std::mutex runs_mutex;
  std::map<std::string, int> runs;
  std::barrier same_moment(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kMessages; ++i) {
        const std::string id = "order-" + std::to_string(i);
        same_moment.arrive_and_wait();
        handle_once(*stores[t], message(id), [&] {
          std::lock_guard lock(runs_mutex);
          ++runs[id];
        });
      }
    });
  }
  for (auto& thread : threads)
    thread.join();

  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kMessages));
  for (const auto& [id, count] : runs)
    EXPECT_EQ(count, 1) << id << " was handled " << count << " times";
}

// A failed attempt records nothing: the copy waiting on its claim, or its retry, runs the handler.
TEST(PgInboxClaim, ReleasedClaim_LetsTheNextCopyRunAndAProcessedOneMakesItADuplicate) {
  testing::PgTestSchema schema;
  PG_TEST_SCHEMA_OR_SKIP(schema);
  PgInboxStoreOptions options;
  options.worker = "emails";
  options.dsn = schema.dsn();
  PgInboxStore store(options);

  auto first = store.claim(message("order-1"));
  ASSERT_NE(first, nullptr);
  first.reset();  // the handler failed
  auto retry = store.claim(message("order-1"));
  ASSERT_NE(retry, nullptr);
  retry->processed();
  EXPECT_EQ(store.claim(message("order-1")), nullptr);
  EXPECT_TRUE(store.seen(message("order-1")));
}

// orders_projection records the id in warren_inbox inside its own transaction, under the host's
// claim of the same id: that insert must not wait for the claim (the claim ends only after the
// handler returns), and the claim then ends without recording it twice.
TEST(PgInboxClaim, HandlerRecordingTheIdInItsOwnTransaction_DoesNotWaitOnTheClaim) {
  testing::PgTestSchema schema;
  PG_TEST_SCHEMA_OR_SKIP(schema);
  PgInboxStoreOptions options;
  options.worker = "projection";
  options.dsn = schema.dsn();
  PgInboxStore store(options);
  auto plugin_db = schema.connect();
  plugin_db.exec("SET statement_timeout = 5000");  // a wait for the claim fails instead of hanging

  auto claim = store.claim(message("order-1"));
  ASSERT_NE(claim, nullptr);
  EXPECT_NO_THROW(plugin_db.exec(
      "INSERT INTO warren_inbox (worker, message_id) VALUES ('projection', 'order-1') "
      "ON CONFLICT DO NOTHING"));
  EXPECT_NO_THROW(claim->processed());
  EXPECT_EQ(plugin_db.exec("SELECT count(*) FROM warren_inbox").text(0, 0), "1");
  EXPECT_EQ(store.claim(message("order-1")), nullptr);
}

}  // namespace
}  // namespace warren::outbox
