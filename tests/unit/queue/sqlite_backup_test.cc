// `warren queue backup` (queue/sqlite_backup.h) and the way the tools open a queue database
// (queue/sqlite_queue_file.h), on real files: the copy holds every row and is a plain database
// file of its own; an existing target, a missing directory, a missing or foreign database are
// refused with what to do.
#include "queue/sqlite_backup.h"

#include <gmock/gmock.h>

#include <fstream>

#include "queue/sqlite_queue_file.h"
#include "queue_file_fixture.h"

namespace warren::queue::testing {
namespace {

using ::testing::HasSubstr;

std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string open_error(const std::filesystem::path& path) {
  try {
    SqliteOpenOptions options;
    options.path = path;
    open_queue_file(options);
  } catch (const SqliteError& error) {
    return error.what();
  }
  return "(opened)";
}

using QueueBackupTest = QueueFile;

TEST_F(QueueBackupTest, CopyHoldsEveryRow_WhileTheSourceIsOpen_AndStandsAlone) {
  for (int i = 0; i < 250; ++i)
    enqueue("work", "m" + std::to_string(i));
  kill_all("work", "bad");
  enqueue("work", "pending");
  const auto target = path().parent_path() / "backup.db";

  const BackupReport report = backup_queue_file(db(), target);

  EXPECT_EQ(report.rows, 251);
  EXPECT_EQ(report.bytes, std::filesystem::file_size(target));
  EXPECT_FALSE(std::filesystem::exists(target.string() + "-wal"));
  SqliteOpenOptions options;
  options.path = target;
  const auto copy = open_queue_file(options);
  Statement dead(*copy, "SELECT count(*) FROM warren_queue WHERE status = 'dead'");
  ASSERT_TRUE(dead.step());
  EXPECT_EQ(dead.integer(0), 250);
  dead.reset();
}

TEST_F(QueueBackupTest, ExistingTarget_IsRefusedAndLeftAsItWas) {
  const auto target = path().parent_path() / "precious.db";
  std::ofstream(target) << "keep me";
  EXPECT_THROW(backup_queue_file(db(), target), BackupTargetExists);
  EXPECT_EQ(contents(target), "keep me");

  const auto link = path().parent_path() / "dangling";
  std::filesystem::create_symlink(path().parent_path() / "nowhere.db", link);
  EXPECT_THROW(backup_queue_file(db(), link), BackupTargetExists);
  EXPECT_FALSE(std::filesystem::exists(path().parent_path() / "nowhere.db"));
}

TEST_F(QueueBackupTest, MissingDirectory_SaysWhichOne) {
  const auto target = path().parent_path() / "no" / "such" / "backup.db";
  try {
    backup_queue_file(db(), target);
    FAIL() << "wrote a backup into a missing directory";
  } catch (const SqliteError& error) {
    EXPECT_THAT(error.what(),
                HasSubstr("the directory '" + target.parent_path().string() + "' does not exist"));
  }
}

TEST_F(QueueBackupTest, OpenQueueFile_MissingForeignOrNewer_AreRefusedWithTheFix) {
  const auto dir = path().parent_path();
  EXPECT_THAT(open_error(dir / "missing.db"), HasSubstr("does not exist: `warren topology apply`"));
  EXPECT_FALSE(std::filesystem::exists(dir / "missing.db")) << "a look created the file";

  {
    SqliteOpenOptions options;
    options.path = dir / "foreign.db";
    SqliteConnection foreign(options);
    foreign.exec("CREATE TABLE t (x)");
  }
  EXPECT_THAT(open_error(dir / "foreign.db"), HasSubstr("holds no Warren queue"));

  ASSERT_EQ(change("UPDATE warren_schema SET version = 99"), 1);
  EXPECT_THAT(open_error(path()), HasSubstr("schema version 99, made by a newer Warren"));
}

}  // namespace
}  // namespace warren::queue::testing
