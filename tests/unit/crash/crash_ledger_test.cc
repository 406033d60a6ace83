// Specification of the crash ledger and of crash identities: counts go up per crash and survive a
// restart, expire a day after the last crash, go when cleared; a corrupt or truncated ledger is
// discarded saying why; the file is replaced whole and gone when empty.
#include "runtime/crash_ledger.h"

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>

#include "crash_test_support.h"
#include "runtime/checksum.h"

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::identity;
using ::testing::IsEmpty;
using testing::read_bytes;
using testing::write_bytes;
using Clock = CrashLedger::Clock;

class CrashLedgerTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_.path() / "host.crash-ledger"; }

  // The ledger as the next run reads it at `now`.
  std::unique_ptr<CrashLedger> reloaded(Clock::time_point now = Clock::now(),
                                        std::string* problem = nullptr) const {
    auto ledger = std::make_unique<CrashLedger>(path());
    const std::string found = ledger->load(now);
    if (problem != nullptr)
      *problem = found;
    else
      EXPECT_THAT(found, IsEmpty());
    return ledger;
  }

  // A saved ledger: "poison" crashed twice (the last time by SIGSEGV), "slow" once.
  void save_two_records(Clock::time_point when = Clock::now()) const {
    CrashLedger ledger(path());
    ASSERT_THAT(ledger.load(when), IsEmpty());
    ledger.record_crashes({identity("poison"), identity("slow")}, SIGABRT, when);
    ledger.record_crashes({identity("poison")}, SIGSEGV, when);
    ASSERT_THAT(ledger.save(), IsEmpty());
  }

  test_support::TempDir dir_;
};

TEST_F(CrashLedgerTest, MissingFile_IsAnEmptyLedger) {
  EXPECT_EQ(reloaded()->size(), 0u);
}

TEST_F(CrashLedgerTest, EachCrash_CountsOnce_AndTheCountsSurviveARestart) {
  const auto now = Clock::now();
  save_two_records(now);

  const auto ledger = reloaded(now);
  const auto poison = ledger->find(identity("poison"), now);
  const auto slow = ledger->find(identity("slow"), now);
  ASSERT_TRUE(poison && slow);
  EXPECT_EQ(poison->crashes, 2);
  EXPECT_EQ(poison->last_signal, SIGSEGV);
  EXPECT_EQ(slow->crashes, 1);
  EXPECT_EQ(slow->last_signal, SIGABRT);
  EXPECT_EQ(slow->last_crash_unix_ms,
            std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
  EXPECT_FALSE(ledger->find(identity("innocent"), now));
  EXPECT_FALSE(ledger->find(identity("poison", "another worker"), now));
}

TEST_F(CrashLedgerTest, RecordCrashes_ReturnsTheNewCounts) {
  CrashLedger ledger(path());
  const auto now = Clock::now();
  ledger.record_crashes({identity("a")}, 0, now);
  const auto records = ledger.record_crashes({identity("a"), identity("b")}, 0, now);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].crashes, 2);
  EXPECT_EQ(records[1].crashes, 1);
}

TEST_F(CrashLedgerTest, Entries_ExpireADayAfterTheirLastCrash) {
  const auto crashed = Clock::now() - 25h;
  save_two_records(crashed);

  EXPECT_EQ(reloaded(crashed + 23h)->size(), 2u);
  const auto ledger = reloaded(crashed + 24h);
  EXPECT_EQ(ledger->size(), 0u);
  EXPECT_FALSE(ledger->find(identity("poison"), crashed + 24h));
}

TEST_F(CrashLedgerTest, ExpiredEntry_CountsFromOneAgain) {
  CrashLedger ledger(path());
  const auto first = Clock::now() - 30h;
  ledger.record_crashes({identity("a")}, 0, first);
  ledger.record_crashes({identity("a")}, 0, first);
  EXPECT_FALSE(ledger.find(identity("a"), Clock::now()));
  const auto records = ledger.record_crashes({identity("a")}, 0, Clock::now());
  EXPECT_EQ(records[0].crashes, 1);
}

TEST_F(CrashLedgerTest, Forget_RemovesTheEntryOnDiskToo) {
  save_two_records();
  auto ledger = reloaded();
  std::string error;
  EXPECT_TRUE(ledger->forget(identity("slow"), error));
  EXPECT_THAT(error, IsEmpty());
  EXPECT_FALSE(ledger->forget(identity("slow"), error)) << "forgotten twice";
  EXPECT_FALSE(ledger->find(identity("slow"), Clock::now()));

  const auto after_restart = reloaded();
  EXPECT_FALSE(after_restart->find(identity("slow"), Clock::now()));
  EXPECT_TRUE(after_restart->find(identity("poison"), Clock::now()));
}

TEST_F(CrashLedgerTest, LastEntryForgotten_RemovesTheFile) {
  save_two_records();
  auto ledger = reloaded();
  std::string error;
  ledger->forget(identity("slow"), error);
  ledger->forget(identity("poison"), error);
  EXPECT_FALSE(std::filesystem::exists(path()));
  EXPECT_FALSE(std::filesystem::exists(path().string() + ".tmp"));
}

TEST_F(CrashLedgerTest, TextsWithTabsNewlinesAndBackslashes_RoundTrip) {
  const CrashIdentity odd = identity("id\twith\ttabs\nand a newline \\ and \\t", "w\\", "q\n");
  CrashLedger ledger(path());
  ledger.record_crashes({odd}, 0, Clock::now());
  ASSERT_THAT(ledger.save(), IsEmpty());
  EXPECT_TRUE(reloaded()->find(odd, Clock::now()));
}

TEST_F(CrashLedgerTest, CorruptFile_IsDiscardedSayingWhy) {
  save_two_records();
  std::string bytes = read_bytes(path());
  bytes[bytes.find("poison")] = 'P';
  write_bytes(path(), bytes);

  std::string problem;
  const auto ledger = reloaded(Clock::now(), &problem);
  EXPECT_THAT(problem, HasSubstr("checksum"));
  EXPECT_EQ(ledger->size(), 0u);
}

TEST_F(CrashLedgerTest, TruncatedFile_IsDiscardedSayingWhy) {
  save_two_records();
  std::filesystem::resize_file(path(), std::filesystem::file_size(path()) - 5);
  std::string problem;
  EXPECT_EQ(reloaded(Clock::now(), &problem)->size(), 0u);
  EXPECT_THAT(problem, HasSubstr("truncated"));
}

TEST_F(CrashLedgerTest, SomethingElse_IsDiscardedAndReplacedAtTheNextSave) {
  write_bytes(path(), "hello\n");
  std::string problem;
  auto ledger = reloaded(Clock::now(), &problem);
  EXPECT_THAT(problem, HasSubstr("not a whole crash ledger"));
  ledger->record_crashes({identity("a")}, 0, Clock::now());
  ASSERT_THAT(ledger->save(), IsEmpty());
  EXPECT_TRUE(reloaded()->find(identity("a"), Clock::now()));
}

TEST_F(CrashLedgerTest, UnwritableDirectory_SaveSaysWhyAndKeepsTheCountsInMemory) {
  testing::SmallTmpfs fs("64k", /*read_only=*/true);
  WARREN_SKIP_UNLESS_MOUNTED(fs);
  CrashLedger ledger(fs.path() / "host.crash-ledger");
  ledger.record_crashes({identity("a")}, 0, Clock::now());
  EXPECT_THAT(ledger.save(), HasSubstr("Read-only file system"));
  EXPECT_TRUE(ledger.find(identity("a"), Clock::now()));
}

// A ledger file holding `records` lines, with a right checksum: what a hand edit or a disk that
// kept a checksummed block whole but another run's numbers could leave.
std::string ledger_file(const std::string& records) {
  const std::string checked = "warren crash ledger 1\n" + records;
  char checksum[16];
  std::snprintf(checksum, sizeof checksum, "%08x", crc32(checked));
  return checked + "end\t" + checksum + "\n";
}

// Seen through tests/fuzz/crash_ledger.cc (UBSan: signed overflow in the expiry check): a crash at
// the far end of the past is long expired, not kept forever.
TEST_F(CrashLedgerTest, LastCrashAtTheEarliestTimeThereIs_HasExpired) {
  write_bytes(path(), ledger_file("1\t-9223372036854775808\t11\tw\tq\tid:poison\n"));
  const auto ledger = reloaded();
  EXPECT_EQ(ledger->size(), 0u);
  EXPECT_FALSE(ledger->find(identity("poison"), Clock::now()));
}

// Seen through tests/fuzz/crash_ledger.cc (UBSan: signed overflow in record_crashes): a count read
// at the largest int stays there, rather than wrapping to a negative count that max_crashes would
// never stop.
TEST_F(CrashLedgerTest, CountAtTheLargestInt_StaysThereAtTheNextCrash) {
  const auto now = Clock::now();
  const std::string now_ms = std::to_string(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
  write_bytes(path(), ledger_file("2147483647\t" + now_ms + "\t11\tw\tq\tid:poison\n"));
  const auto ledger = reloaded(now);
  const auto records = ledger->record_crashes({identity("poison")}, SIGSEGV, now);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].crashes, std::numeric_limits<int>::max());
}

// ---- identities ---------------------------------------------------------------------------------

TEST(CrashIdentity, MessageId_IsTheKey) {
  EXPECT_EQ(identity("abc").key, "id:abc");
  EXPECT_EQ(identity("abc").describe(), "message id 'abc'");
}

TEST(CrashIdentity, WithoutId_BodyAndRoutingKeyHashed) {
  transport::InboundMessage message;
  message.queue = "q";
  message.routing_key = "order.created";
  message.body = "{\"order\": 1}";
  const CrashIdentity same = CrashIdentity::of("w", message);
  EXPECT_TRUE(same.key.starts_with("body:")) << same.key;
  EXPECT_EQ(CrashIdentity::of("w", message), same);
  transport::InboundMessage other_key = message;
  other_key.routing_key = "order.created2";
  EXPECT_NE(CrashIdentity::of("w", other_key), same);
  transport::InboundMessage other_body = message;
  other_body.body += " ";
  EXPECT_NE(CrashIdentity::of("w", other_body), same);
  // The separator keeps "a"+"bc" apart from "ab"+"c".
  transport::InboundMessage split_a = message, split_b = message;
  split_a.routing_key = "a";
  split_a.body = "bc";
  split_b.routing_key = "ab";
  split_b.body = "c";
  EXPECT_NE(CrashIdentity::of("w", split_a), CrashIdentity::of("w", split_b));
}

TEST(CrashIdentity, OverLongParts_AreBoundedAndStayDistinct) {
  const CrashIdentity a = identity(std::string(500, 'x') + "a", std::string(200, 'w'));
  const CrashIdentity b = identity(std::string(500, 'x') + "b", std::string(200, 'w'));
  EXPECT_EQ(a.key.size(), CrashIdentity::kMaxKey);
  EXPECT_EQ(a.worker.size(), CrashIdentity::kMaxName);
  EXPECT_NE(a, b);
  EXPECT_EQ(CrashIdentity::from_parts(a.worker, a.queue, a.key), a) << "bounding is idempotent";
}

}  // namespace
}  // namespace warren::runtime
