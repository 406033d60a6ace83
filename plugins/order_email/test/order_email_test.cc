// order_email through the harness: one complete e-mail per event, duplicates acked without a
// second e-mail, poison messages dead-lettered, bad settings refused at start.
#include "order_email.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "order_placed_samples.h"
#include "read_only_directory.h"
#include "temp_dir.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using warren::test_support::event_id;
using warren::test_support::order_placed_json;
using warren::test_support::order_placed_message;
using warren::test_support::TempDir;
using warren::testing::Harness;
using warren::testing::Result;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> files_in(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

double emails_sent(const Harness& harness) {
  const auto metrics = harness.metrics();
  return metrics.at("warren_plugin_emails_sent_total").sum();
}

class OrderEmailTest : public ::testing::Test {
 protected:
  TempDir out;
  Harness harness = Harness::of<livraria::OrderEmail>({{"out_dir", out.path().string()}}, "emails");
};

TEST_F(OrderEmailTest, ValidEvent_IsAckedAndWritesOneCompleteEmailNamedByTheEventId) {
  const Result r = harness.deliver(
      order_placed_message(order_placed_json(event_id(1), 42, {{7, 2, 39.9}, {3, 1, 12.5}})));

  EXPECT_EQ(r.kind, Result::Kind::ack) << r;
  const std::string file = event_id(1) + ".eml";
  EXPECT_THAT(files_in(out.path()), ::testing::ElementsAre(file)) << "no temporary file is left";
  const std::string email = read_file(out.path() / file);
  EXPECT_THAT(email, HasSubstr("Subject: Order 42 confirmed\n"));
  EXPECT_THAT(email, HasSubstr("X-Livraria-Customer-Id: c-17\n"));
  EXPECT_THAT(email, HasSubstr("  2 x product 7 at 39.90\n  1 x product 3 at 12.50\n"));
  EXPECT_THAT(email, HasSubstr("Total: 92.30\n"));
  EXPECT_EQ(emails_sent(harness), 1.0);
}

TEST_F(OrderEmailTest, DuplicateEvent_IsAckedWithoutSendingOrRewritingTheEmail) {
  const auto message = order_placed_message(order_placed_json(event_id(2), 43, {{7, 1}}));
  ASSERT_EQ(harness.deliver(message).kind, Result::Kind::ack);
  const auto file = out.path() / (event_id(2) + ".eml");
  std::ofstream(file) << "sent before";  // marks the file: a rewrite would erase this

  const Result again = harness.deliver(message);

  EXPECT_EQ(again.kind, Result::Kind::ack) << again;
  EXPECT_EQ(read_file(file), "sent before");
  EXPECT_EQ(emails_sent(harness), 1.0);
  EXPECT_THAT(harness.logs().back().text, HasSubstr("already sent"));
}

TEST_F(OrderEmailTest, SameEventDeliveredOnEightThreadsAtOnce_IsSentExactlyOnce) {
  const auto message = order_placed_message(order_placed_json(event_id(3), 44, {{7, 1}}));
  std::vector<std::thread> threads;
  std::atomic<int> acks{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      if (harness.deliver(message).kind == Result::Kind::ack)
        acks.fetch_add(1);
    });
  }
  for (auto& thread : threads)
    thread.join();

  EXPECT_EQ(acks.load(), 8);
  EXPECT_EQ(emails_sent(harness), 1.0);
  EXPECT_EQ(files_in(out.path()).size(), 1u);
}

TEST_F(OrderEmailTest, MalformedJson_IsDeadLetteredWithTheParseErrorAndSendsNothing) {
  const Result r = harness.deliver(order_placed_message(R"({"event_id": "oops)"));

  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_EQ(r.error, Result::Error::permanent);
  EXPECT_THAT(r.reason, HasSubstr("body is not valid JSON: [json.exception.parse_error.101]"));
  EXPECT_TRUE(files_in(out.path()).empty());
}

TEST_F(OrderEmailTest, MissingRequiredField_IsDeadLetteredNamingTheField) {
  const Result r = harness.deliver(order_placed_message(
      R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1,
          "customer_id": "c-1", "total": 1})"));

  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_THAT(r.reason, HasSubstr("field 'items' is missing"));
}

// docs/contracts.md: an event of the first release (no sales_channel) is mailed with the
// default; one of a newer major version is dead-lettered saying so, and nothing is sent.
TEST_F(OrderEmailTest, EventWithoutSalesChannel_IsMailedWithTheChannelUnknown) {
  const Result r =
      harness.deliver(order_placed_message(order_placed_json(event_id(5), 46, {{7, 1}})));

  EXPECT_EQ(r.kind, Result::Kind::ack) << r;
  EXPECT_THAT(read_file(out.path() / (event_id(5) + ".eml")),
              HasSubstr("X-Livraria-Sales-Channel: unknown\n"));
}

TEST_F(OrderEmailTest, EventOfANewerMajorVersion_IsDeadLetteredWithTheReasonAndSendsNothing) {
  const Result r = harness.deliver(order_placed_message(
      R"({"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 1, "customer_id": "c",
          "total": 1, "items": [], "version": 2})"));

  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_EQ(r.error, Result::Error::permanent);
  EXPECT_THAT(r.reason, HasSubstr("version 2 of the contract is newer than this consumer reads"));
  EXPECT_TRUE(files_in(out.path()).empty());
  EXPECT_EQ(emails_sent(harness), 0.0);
}

TEST_F(OrderEmailTest, OtherRoutingKey_IsDeadLetteredPointingAtTheBindings) {
  auto message = order_placed_message(order_placed_json(event_id(4), 45, {{7, 1}}));
  message.routing_key = "pedido.cancelado";

  const Result r = harness.deliver(message);

  EXPECT_EQ(r.kind, Result::Kind::dead_letter) << r;
  EXPECT_THAT(r.reason, HasSubstr("check the bindings"));
  EXPECT_TRUE(files_in(out.path()).empty());
}

TEST_F(OrderEmailTest, SpoolVanishingAfterStart_IsRetriedAndNotCounted) {
  std::filesystem::remove_all(out.path());

  const Result r =
      harness.deliver(order_placed_message(order_placed_json(event_id(5), 46, {{7, 1}})));

  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  EXPECT_EQ(r.error, Result::Error::std_exception);
  EXPECT_THAT(r.reason, HasSubstr(out.path().string()));
  EXPECT_EQ(emails_sent(harness), 0.0);
}

TEST(OrderEmailSettings, MissingOutDir_FailsConstructionSayingWhatToSet) {
  EXPECT_THAT([] { Harness::of<livraria::OrderEmail>({}, "emails"); },
              ThrowsMessage<std::runtime_error>(HasSubstr(
                  "order_email: setting 'out_dir' is required: the directory the confirmation")));
}

TEST(OrderEmailSettings, NonexistentOutDir_FailsConstructionNamingIt) {
  TempDir parent;
  const std::string missing = parent / "nope";
  EXPECT_THAT(
      [&] {
        Harness::of<livraria::OrderEmail>({{"out_dir", missing}});
      },
      ThrowsMessage<std::runtime_error>(
          HasSubstr("order_email: out_dir '" + missing + "' does not exist")));
}

TEST(OrderEmailSettings, OutDirThatIsAFile_FailsConstruction) {
  TempDir parent;
  const std::string file = parent / "file";
  std::ofstream(file) << "x";
  EXPECT_THAT(
      [&] {
        Harness::of<livraria::OrderEmail>({{"out_dir", file}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("is not a directory")));
}

// As root too (CI runs as root): a read-only bind mount there, not permission bits.
TEST(OrderEmailSettings, ReadOnlyOutDir_FailsConstruction) {
  TempDir out;
  const livraria::test::ReadOnlyDirectory read_only(out.path());
  EXPECT_THAT(
      [&] {
        Harness::of<livraria::OrderEmail>({{"out_dir", out.path().string()}});
      },
      ThrowsMessage<std::runtime_error>(HasSubstr("is not writable")));
}

}  // namespace
