// Specification of the crash journal: what a run leaves in its slots is what the next run reads
// back, after a real crash of a real process too; torn slots, corrupt, truncated and foreign files
// are reported and never fault the reader; a directory that cannot hold it is a clear error.
#include "runtime/crash_journal.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "crash_test_support.h"
#include "real_segfault.h"
#include "runtime/checksum.h"
#include "runtime/fatal_signal.h"

namespace warren::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::identity;
using testing::read_bytes;
using testing::SmallTmpfs;
using testing::write_bytes;
namespace format = journal_format;

class CrashJournalTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_.path() / "host.crash-journal"; }

  // What a new run finds: locks the journal and reads it.
  CrashJournal::Previous reopen() const { return CrashJournal::lock(path())->read_previous(); }

  static const format::Snapshot& snapshot_of(const CrashJournal::Previous& previous) {
    const auto* snapshot = std::get_if<format::Snapshot>(&previous);
    if (snapshot == nullptr)
      throw std::runtime_error("expected a snapshot");
    return *snapshot;
  }

  static std::string defect_of(const CrashJournal::Previous& previous) {
    const auto* defect = std::get_if<format::Defect>(&previous);
    return defect == nullptr ? "(no defect)" : defect->why;
  }

  // A journal of 4 slots left by a run that died with `a` in slot 1 and `b` in slot 3.
  void leave_a_crashed_run(const CrashIdentity& a, const CrashIdentity& b) const {
    auto journal = CrashJournal::lock(path());
    journal->start(4);
    journal->enter(0, identity("finished"));
    journal->leave(0);
    journal->enter(1, a);
    journal->enter(3, b);
  }  // destroyed without remove(): as the process dying leaves it

  test_support::TempDir dir_;
};

std::vector<CrashIdentity> identities_of(const format::Snapshot& snapshot) {
  std::vector<CrashIdentity> identities;
  for (const auto& entry : snapshot.running)
    identities.push_back(entry.identity);
  return identities;
}

TEST_F(CrashJournalTest, NewFile_ReadsAsNothingLeft) {
  EXPECT_TRUE(std::holds_alternative<std::monostate>(reopen()));
}

TEST_F(CrashJournalTest, SlotsEnteredAndNotLeft_ReadBackWithTheirIdentitiesAndSlots) {
  const CrashIdentity a = identity("poison"), b = identity("neighbour", "other-worker", "q2");
  leave_a_crashed_run(a, b);

  const CrashJournal::Previous previous = reopen();
  const format::Snapshot& snapshot = snapshot_of(previous);
  EXPECT_THAT(identities_of(snapshot), ElementsAre(a, b));
  EXPECT_EQ(snapshot.running[0].slot, 1u);
  EXPECT_EQ(snapshot.running[1].slot, 3u);
  EXPECT_EQ(snapshot.pid, static_cast<std::uint32_t>(::getpid()));
  EXPECT_EQ(snapshot.fatal_signal, 0);
  EXPECT_TRUE(snapshot.torn.empty());
  EXPECT_TRUE(snapshot.garbled.empty());
}

TEST_F(CrashJournalTest, LeftSlot_IsEmptyAgain) {
  {
    auto journal = CrashJournal::lock(path());
    journal->start(2);
    journal->enter(0, identity("a"));
    journal->enter(1, identity("b"));
    journal->leave(0);
    journal->leave(1);
  }
  EXPECT_TRUE(snapshot_of(reopen()).running.empty());
}

TEST_F(CrashJournalTest, Start_ReplacesWhatThePreviousRunLeft) {
  leave_a_crashed_run(identity("a"), identity("b"));
  {
    auto journal = CrashJournal::lock(path());
    ASSERT_EQ(snapshot_of(journal->read_previous()).running.size(), 2u);
    journal->start(8);
  }
  const CrashJournal::Previous previous = reopen();
  EXPECT_TRUE(snapshot_of(previous).running.empty());
  EXPECT_EQ(read_bytes(path()).size(), format::file_size(8));
}

TEST_F(CrashJournalTest, LongNamesAndIds_FitTheirSlotAndReadBackEqual) {
  const CrashIdentity long_one =
      identity(std::string(1000, 'i'), std::string(300, 'w'), std::string(300, 'q'));
  leave_a_crashed_run(long_one, identity("short"));
  EXPECT_EQ(identities_of(snapshot_of(reopen()))[0], long_one);
}

TEST_F(CrashJournalTest, CleanStop_RemovesTheFile) {
  {
    auto journal = CrashJournal::lock(path());
    journal->start(2);
    journal->enter(0, identity("still running at the shutdown timeout"));
    journal->remove();
  }
  EXPECT_FALSE(std::filesystem::exists(path()));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(reopen()));
}

// ---- a real crash of a real process ------------------------------------------------------------

// Runs `crash` in a child process that has a journal with `poison` in slot 0 and records fatal
// signals; returns the child's wait status.
int crash_child(const std::filesystem::path& path, const CrashIdentity& poison, void (*crash)()) {
  const pid_t child = ::fork();
  if (child == 0) {
    auto journal = CrashJournal::lock(path);
    journal->start(2);
    record_fatal_signals_at(journal->fatal_signal_word());
    journal->enter(0, poison);
    crash();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

TEST_F(CrashJournalTest, ProcessAborts_TheNextRunReadsItsSlotAndSIGABRT) {
  const int status = crash_child(path(), identity("poison"), [] { std::abort(); });

  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT) << "the handler must let the signal take its course";
  const CrashJournal::Previous previous = reopen();
  EXPECT_THAT(identities_of(snapshot_of(previous)), ElementsAre(identity("poison")));
  EXPECT_EQ(snapshot_of(previous).fatal_signal, SIGABRT);
  EXPECT_EQ(signal_name(SIGABRT), "SIGABRT");
}

TEST_F(CrashJournalTest, ProcessSegfaults_TheNextRunReadsItsSlotAndSIGSEGV) {
  const int status = crash_child(path(), identity("poison"), [] { test_support::real_segfault(); });

  // Dead of SIGSEGV; under ASan, whose handler the fault reaches after the journal's, exit 1.
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child survived a segfault";
  const CrashJournal::Previous previous = reopen();
  EXPECT_THAT(identities_of(snapshot_of(previous)), ElementsAre(identity("poison")));
  EXPECT_EQ(snapshot_of(previous).fatal_signal, SIGSEGV);
}

TEST_F(CrashJournalTest, ProcessKilled_TheNextRunReadsItsSlotWithTheSignalUnknown) {
  const int status = crash_child(path(), identity("slow"), [] { ::kill(::getpid(), SIGKILL); });

  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "exit status " << status;
  const CrashJournal::Previous previous = reopen();
  EXPECT_THAT(identities_of(snapshot_of(previous)), ElementsAre(identity("slow")));
  EXPECT_EQ(snapshot_of(previous).fatal_signal, 0);
}

// ---- torn, corrupt, truncated, foreign ---------------------------------------------------------

TEST_F(CrashJournalTest, TornSlot_IsReportedAndBlamesNobody_TheOtherSlotsStillCount) {
  leave_a_crashed_run(identity("a"), identity("b"));
  std::string bytes = read_bytes(path());
  // One byte of slot 1's text changed, as a half-written slot would look.
  bytes[format::kHeaderSize + 1 * format::kSlotSize + offsetof(format::Slot, text) + 2] ^= 0x5A;
  write_bytes(path(), bytes);

  const CrashJournal::Previous previous = reopen();
  EXPECT_THAT(identities_of(snapshot_of(previous)), ElementsAre(identity("b")));
  EXPECT_THAT(snapshot_of(previous).torn, ElementsAre(1u));
}

TEST_F(CrashJournalTest, SlotWithImpossibleSizes_IsTornNotRead) {
  leave_a_crashed_run(identity("a"), identity("b"));
  std::string bytes = read_bytes(path());
  const std::uint16_t huge = 60000;
  std::memcpy(
      &bytes[format::kHeaderSize + 3 * format::kSlotSize + offsetof(format::Slot, key_size)], &huge,
      sizeof huge);
  write_bytes(path(), bytes);

  EXPECT_THAT(snapshot_of(reopen()).torn, ElementsAre(3u));
}

TEST_F(CrashJournalTest, GarbledStateWord_IsReportedAndBlamesNobody) {
  leave_a_crashed_run(identity("a"), identity("b"));
  std::string bytes = read_bytes(path());
  bytes[format::kHeaderSize + 3 * format::kSlotSize] = 'X';
  write_bytes(path(), bytes);

  const CrashJournal::Previous previous = reopen();
  EXPECT_THAT(identities_of(snapshot_of(previous)), ElementsAre(identity("a")));
  EXPECT_THAT(snapshot_of(previous).garbled, ElementsAre(3u));
}

TEST_F(CrashJournalTest, TruncatedFile_IsDiscardedSayingSo) {
  leave_a_crashed_run(identity("a"), identity("b"));
  std::filesystem::resize_file(path(), format::kHeaderSize + format::kSlotSize + 100);
  EXPECT_THAT(defect_of(reopen()), HasSubstr("truncated"));
}

TEST_F(CrashJournalTest, FileShorterThanAHeader_IsDiscarded) {
  write_bytes(path(), "WRNC");
  EXPECT_THAT(defect_of(reopen()), HasSubstr("shorter than a header"));
}

TEST_F(CrashJournalTest, CorruptHeader_IsDiscarded) {
  leave_a_crashed_run(identity("a"), identity("b"));
  std::string bytes = read_bytes(path());
  bytes[offsetof(format::Header, slot_count)] ^= 0x01;
  write_bytes(path(), bytes);
  EXPECT_THAT(defect_of(reopen()), HasSubstr("checksum"));
}

TEST_F(CrashJournalTest, SomethingElseEntirely_IsDiscarded) {
  write_bytes(path(), std::string(5000, '\x7f'));
  EXPECT_THAT(defect_of(reopen()), HasSubstr("does not begin like a crash journal"));
}

TEST_F(CrashJournalTest, AnotherVersion_IsDiscardedNamingIt) {
  format::Header header = format::make_header(0, 1, 0);
  header.version = 99;
  // A header that checks out, of a version this host does not read.
  const std::string checksummed(reinterpret_cast<const char*>(&header), format::kHeaderChecksummed);
  header.checksum = crc32(checksummed);
  write_bytes(path(), std::string(reinterpret_cast<const char*>(&header), sizeof header));
  EXPECT_THAT(defect_of(reopen()), HasSubstr("another version (99"));
}

TEST_F(CrashJournalTest, DiscardedFile_IsReplacedByAGoodJournal) {
  write_bytes(path(), std::string(100, '\0'));
  {
    auto journal = CrashJournal::lock(path());
    ASSERT_THAT(defect_of(journal->read_previous()), HasSubstr("crash journal"));
    journal->start(2);
    journal->enter(1, identity("after"));
  }
  EXPECT_THAT(identities_of(snapshot_of(reopen())), ElementsAre(identity("after")));
}

// ---- where it cannot be ------------------------------------------------------------------------

TEST_F(CrashJournalTest, MissingStateDirectory_IsAnErrorSayingTheHostDoesNotCreateIt) {
  try {
    CrashJournal::lock(dir_.path() / "missing" / "host.crash-journal");
    FAIL() << "no error";
  } catch (const CrashJournalError& error) {
    EXPECT_THAT(error.what(), HasSubstr("does not exist"));
    EXPECT_THAT(error.what(), HasSubstr("state_dir"));
  }
}

TEST_F(CrashJournalTest, HeldByAnotherHost_IsAnErrorNamingTheCure) {
  auto first = CrashJournal::lock(path());
  try {
    CrashJournal::lock(path());
    FAIL() << "two hosts got the same journal";
  } catch (const CrashJournalError& error) {
    EXPECT_THAT(error.what(), HasSubstr("another running host uses it"));
  }
}

TEST_F(CrashJournalTest, FullFileSystem_StartFailsCleanlyAndLeavesNoHalfJournal) {
  SmallTmpfs fs("64k");
  WARREN_SKIP_UNLESS_MOUNTED(fs);
  fs.fill();
  const std::filesystem::path file = fs.path() / "host.crash-journal";
  auto journal = CrashJournal::lock(file);
  try {
    journal->start(64);  // 32 KiB and more
    FAIL() << "a journal on a full file system";
  } catch (const CrashJournalError& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot reserve"));
    EXPECT_THAT(error.what(), HasSubstr("No space left on device"));
  }
  journal->enter(0, identity("nothing mapped: ignored"));  // no fault
  journal.reset();
  EXPECT_TRUE(std::holds_alternative<std::monostate>(CrashJournal::lock(file)->read_previous()));
}

TEST_F(CrashJournalTest, ReadOnlyFileSystem_IsAnErrorSayingWhy) {
  SmallTmpfs fs("64k", /*read_only=*/true);
  WARREN_SKIP_UNLESS_MOUNTED(fs);
  try {
    CrashJournal::lock(fs.path() / "host.crash-journal");
    FAIL() << "a journal on a read-only file system";
  } catch (const CrashJournalError& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot open or create it: Read-only file system"));
  }
}

}  // namespace
}  // namespace warren::runtime
