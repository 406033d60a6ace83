// sales_ranking through the harness: each order counted exactly once (also across restarts and
// under concurrent delivery), saved to its state file, poison messages dead-lettered, bad
// settings refused at start.
#include "sales_ranking.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "order_placed_samples.h"
#include "state_file.h"
#include "temp_dir.h"
#include "warren/testing/harness.h"

namespace {

using livraria::Ranking;
using livraria::SalesRanking;
using livraria::StateFile;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::test_support::event_id;
using warren::test_support::order_placed_json;
using warren::test_support::order_placed_message;
using warren::test_support::TempDir;
using warren::testing::Harness;
using warren::testing::Result;

double metric(const Harness& harness, const std::string& name) {
  const auto metrics = harness.metrics();
  return metrics.at("warren_plugin_" + name).sum();
}

class SalesRankingTest : public ::testing::Test {
 protected:
  Harness start(warren::testing::Settings extra = {}) {
    extra.emplace("state_file", state_file);
    return Harness::of<SalesRanking>(std::move(extra), "ranking");
  }
  Ranking saved() const { return StateFile(state_file).load(); }

  TempDir dir;
  std::string state_file = dir / "ranking.json";
};

TEST_F(SalesRankingTest, ValidEvent_IsAckedCountedAndSaved) {
  Harness harness = start();

  const Result r =
      harness.deliver(order_placed_message(order_placed_json(event_id(1), 42, {{7, 2}, {3, 1}})));

  EXPECT_EQ(r.kind, Result::Kind::ack) << r;
  EXPECT_EQ(saved().quantity_of(7), 2);
  EXPECT_EQ(saved().quantity_of(3), 1);
  EXPECT_EQ(saved().events_counted(), 1u);
  EXPECT_EQ(metric(harness, "ranking_events_counted_total"), 1.0);
}

TEST_F(SalesRankingTest, DuplicateEvent_IsAckedWithoutCountingAgain) {
  Harness harness = start();
  const auto message = order_placed_message(order_placed_json(event_id(1), 42, {{7, 2}}));
  ASSERT_EQ(harness.deliver(message).kind, Result::Kind::ack);

  const Result again = harness.deliver(message);

  EXPECT_EQ(again.kind, Result::Kind::ack) << again;
  EXPECT_EQ(saved().quantity_of(7), 2);
  EXPECT_EQ(metric(harness, "ranking_duplicates_total"), 1.0);
  EXPECT_THAT(harness.logs().back().text, HasSubstr("already counted"));
}

TEST_F(SalesRankingTest, AfterARestart_TheRankingIsLoadedAndOldEventsAreStillDuplicates) {
  const auto first = order_placed_message(order_placed_json(event_id(1), 42, {{7, 2}}));
  start().deliver(first);

  Harness restarted = start();
  restarted.deliver(first);
  restarted.deliver(order_placed_message(order_placed_json(event_id(2), 43, {{7, 5}})));

  EXPECT_EQ(saved().quantity_of(7), 7);
  EXPECT_EQ(metric(restarted, "ranking_duplicates_total"), 1.0);
  EXPECT_THAT(restarted.logs().front().text, HasSubstr("1 events already counted"));
}

TEST_F(SalesRankingTest, MalformedJson_IsDeadLetteredWithTheParseErrorAndCountsNothing) {
  Harness harness = start();

  const Result r = harness.deliver(order_placed_message("{not json"));

  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_EQ(r.error, Result::Error::permanent);
  EXPECT_THAT(r.reason, HasSubstr("body is not valid JSON: [json.exception.parse_error.101]"));
  EXPECT_EQ(saved().events_counted(), 0u);
}

TEST_F(SalesRankingTest, OtherOrderEvents_AreAckedWithoutChangingTheRanking) {
  Harness harness = start();
  auto message = order_placed_message(R"({"order_id": 42})");
  message.routing_key = "pedido.cancelado";

  EXPECT_EQ(harness.deliver(message).kind, Result::Kind::ack);
  EXPECT_EQ(saved().events_counted(), 0u);
}

TEST_F(SalesRankingTest, FailedSave_IsRetriedAndTheCountUndone) {
  TempDir elsewhere;
  const std::string nested = elsewhere / "state";
  std::filesystem::create_directory(nested);
  state_file = nested + "/ranking.json";
  Harness harness = start();
  const auto message = order_placed_message(order_placed_json(event_id(1), 42, {{7, 2}}));
  std::filesystem::remove_all(nested);

  const Result failed = harness.deliver(message);
  std::filesystem::create_directory(nested);
  const Result retried = harness.deliver(message);

  EXPECT_EQ(failed.kind, Result::Kind::retry) << failed;
  EXPECT_THAT(failed.reason, HasSubstr(nested));
  EXPECT_EQ(retried.kind, Result::Kind::ack)
      << retried << " (not a duplicate: the count was undone)";
  EXPECT_EQ(saved().quantity_of(7), 2);
}

TEST_F(SalesRankingTest, EveryLogEveryEvents_TheBestSellersAreLogged) {
  Harness harness = start({{"log_every", "3"}, {"log_top", "2"}});
  harness.deliver(order_placed_message(order_placed_json(event_id(1), 1, {{7, 2}, {3, 1}})));
  harness.deliver(order_placed_message(order_placed_json(event_id(2), 2, {{7, 3}, {9, 1}})));
  EXPECT_THAT(harness.logs().back().text, ::testing::Not(HasSubstr("top")));

  harness.deliver(order_placed_message(order_placed_json(event_id(3), 3, {{3, 1}})));

  const auto last = harness.logs().back();
  EXPECT_EQ(last.text,
            "sales_ranking: top 2 after 3 orders: product 7 (5 sold), product 3 (2 sold)");
  EXPECT_EQ(last.message_id, "") << "a worker-level log line";
}

TEST_F(SalesRankingTest, EightThreadsWithDuplicates_TotalsAreExact) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100;
  const TempDir memory = TempDir::in_memory();
  state_file = memory / "ranking.json";
  Harness harness = start({{"log_every", "1000000"}});
  const auto event = [](int n) {
    return order_placed_message(order_placed_json(event_id(static_cast<std::uint32_t>(n)), n,
                                                  {{n % 5, 1 + n % 3}, {100, 1}}),
                                "m-" + std::to_string(n));
  };
  std::atomic<int> not_acked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Its own events, interleaved with the next thread's (duplicates racing their originals).
      for (int i = 0; i < kPerThread; ++i) {
        for (int owner : {t, (t + 1) % kThreads}) {
          if (harness.deliver(event(owner * kPerThread + i)).kind != Result::Kind::ack) {
            not_acked.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& thread : threads)
    thread.join();

  constexpr int kEvents = kThreads * kPerThread;
  std::map<std::int64_t, std::int64_t> expected;
  for (int n = 0; n < kEvents; ++n) {
    expected[n % 5] += 1 + n % 3;
    expected[100] += 1;
  }
  const Ranking ranking = saved();
  EXPECT_EQ(not_acked.load(), 0);
  EXPECT_EQ(ranking.events_counted(), static_cast<std::size_t>(kEvents));
  for (const auto& [product, quantity] : expected) {
    EXPECT_EQ(ranking.quantity_of(product), quantity) << "product " << product;
  }
  EXPECT_EQ(metric(harness, "ranking_events_counted_total"), kEvents);
  EXPECT_EQ(metric(harness, "ranking_duplicates_total"), kEvents);
}

TEST(SalesRankingSettings, MissingStateFile_FailsConstructionSayingWhatToSet) {
  EXPECT_THAT([] { Harness::of<SalesRanking>({}, "ranking"); },
              ThrowsMessage<std::runtime_error>(
                  HasSubstr("sales_ranking: setting 'state_file' is required")));
}

TEST(SalesRankingSettings, StateFileInAMissingDirectory_FailsConstruction) {
  TempDir dir;
  const std::string path = dir / "missing/ranking.json";
  EXPECT_THAT(
      [&] {
        Harness::of<SalesRanking>({{"state_file", path}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("does not exist: create it first")));
}

TEST(SalesRankingSettings, CorruptStateFile_FailsConstructionAndIsLeftAlone) {
  TempDir dir;
  const std::string path = dir / "ranking.json";
  std::ofstream(path) << R"({"format": 1, "sales": "lots"})";
  EXPECT_THAT(
      [&] {
        Harness::of<SalesRanking>({{"state_file", path}});
      },
      ThrowsMessage<std::runtime_error>(
          AllOf(HasSubstr("state_file '" + path + "' does not hold a sales ranking"),
                HasSubstr("'sales' is missing or not an array"))));
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, R"({"format": 1, "sales": "lots"})");
}

TEST(SalesRankingSettings, NonPositiveLogEvery_FailsConstruction) {
  TempDir dir;
  EXPECT_THAT(
      [&] {
        Harness::of<SalesRanking>({{"state_file", dir / "r.json"}, {"log_every", "0"}});
      },
      ThrowsMessage<std::runtime_error>(
          HasSubstr("setting 'log_every' must be a positive integer, got '0'")));
}

}  // namespace
