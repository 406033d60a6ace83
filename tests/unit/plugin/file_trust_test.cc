// check_trusted_plugin_file: which files may be loaded at all, and how a refusal reads.
#include "plugin/file_trust.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "fixture_plugins.h"

namespace warren::plugin {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using testing::kForeignUid;
using testing::refusal_of;
using ::testing::StartsWith;
using testing::TempPluginDir;

std::string quoted(const fs::path& path) {
  return "\"" + path.string() + "\"";
}

TEST(FileTrust, FileInTrustedDirectory_IsAccepted) {
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  EXPECT_NO_THROW(check_trusted_plugin_file(dir.path(), file));
}

TEST(FileTrust, FileInTrustedSubdirectory_IsAccepted) {
  const TempPluginDir dir;
  dir.make_subdirectory("team");
  const fs::path file = dir.copy_fixture("good", "good", "team");
  EXPECT_NO_THROW(check_trusted_plugin_file(dir.path(), file));
}

TEST(FileTrust, RelativeFileName_IsTakenInsideThePluginDirectory) {
  const TempPluginDir dir;
  dir.copy_fixture("good");
  EXPECT_NO_THROW(check_trusted_plugin_file(dir.path(), "libgood.so"));
}

TEST(FileTrust, WorldWritableFile_IsRefusedNamingTheFileModeAndFix) {
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  TempPluginDir::chmod(file, 0666);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_EQ(error.file(), file);
  EXPECT_THAT(error.reason(), AllOf(StartsWith("refused: writable by group and others (mode 0666)"),
                                    HasSubstr("make it 0755 or 0644 and owned by root")));
  EXPECT_THAT(error.what(), StartsWith(quoted(file) + ": refused: writable by group and others"));
}

TEST(FileTrust, FileWritableByOthersOnly_IsRefused) {
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  TempPluginDir::chmod(file, 0757);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(), StartsWith("refused: writable by others (mode 0757)"));
}

TEST(FileTrust, GroupWritableFile_IsRefused) {
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  TempPluginDir::chmod(file, 0775);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(), StartsWith("refused: writable by group (mode 0775)"));
}

TEST(FileTrust, WorldWritableDirectory_IsRefusedNamingTheDirectory) {
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  TempPluginDir::chmod(dir.path(), 0777);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_EQ(error.file(), file);
  EXPECT_THAT(error.reason(), AllOf(HasSubstr("the plugin directory " + quoted(dir.path())),
                                    HasSubstr("is writable by group and others (mode 0777)"),
                                    HasSubstr("make it 0755")));
}

TEST(FileTrust, StickyWorldWritableDirectory_IsStillRefused) {
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  TempPluginDir::chmod(dir.path(), 01777);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(), HasSubstr("writable by group and others (mode 1777)"));
}

TEST(FileTrust, GroupWritableSubdirectory_IsRefusedNamingIt) {
  const TempPluginDir dir;
  const fs::path team = dir.make_subdirectory("team");
  const fs::path file = dir.copy_fixture("good", "good", "team");
  TempPluginDir::chmod(team, 0775);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(),
              HasSubstr("its directory " + quoted(team) + " is writable by group (mode 0775)"));
}

TEST(FileTrust, SymlinkedFile_IsRefusedNamingItsTarget) {
  const TempPluginDir dir;
  const fs::path real = dir.copy_fixture("good", "real");
  const fs::path link = dir.path() / "libgood.so";
  fs::create_symlink(real, link);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), link); });

  EXPECT_EQ(error.file(), link);
  EXPECT_THAT(error.reason(), StartsWith("refused: it is a symlink (to " + quoted(real) + ")"));
}

TEST(FileTrust, SymlinkedPluginDirectory_IsRefused) {
  const TempPluginDir dir;
  const fs::path real = dir.make_subdirectory("real");
  dir.copy_fixture("good", "good", "real");
  const fs::path link = dir.path() / "plugins";
  fs::create_directory_symlink(real, link);

  const PluginLoadError error =
      refusal_of([&] { check_trusted_plugin_file(link, link / "libgood.so"); });

  EXPECT_THAT(error.reason(), HasSubstr("the plugin directory " + quoted(link) +
                                        " is a symlink (to " + quoted(real) + ")"));
}

TEST(FileTrust, DotDotEscape_IsRefused) {
  const TempPluginDir dir;
  const fs::path inside = dir.make_subdirectory("plugins");
  dir.copy_fixture("good");  // A trusted-looking file one level up.
  const fs::path escaping = inside / ".." / "libgood.so";

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(inside, escaping); });

  EXPECT_EQ(error.file(), escaping);
  EXPECT_THAT(error.reason(), HasSubstr("its path contains \"..\""));
}

TEST(FileTrust, FileOutsideThePluginDirectory_IsRefused) {
  const TempPluginDir dir;
  const TempPluginDir elsewhere;
  const fs::path file = elsewhere.copy_fixture("good");

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(),
              HasSubstr("refused: it is outside the plugin directory " + quoted(dir.path())));
}

TEST(FileTrust, RelativePluginDirectory_IsRefused) {
  const PluginLoadError error =
      refusal_of([] { check_trusted_plugin_file("plugins", "plugins/libgood.so"); });

  EXPECT_THAT(error.reason(),
              HasSubstr("the plugin directory \"plugins\" is not an absolute path"));
}

TEST(FileTrust, MissingPluginDirectory_IsRefused) {
  const TempPluginDir dir;
  const fs::path missing = dir.path() / "missing";

  const PluginLoadError error =
      refusal_of([&] { check_trusted_plugin_file(missing, missing / "libgood.so"); });

  EXPECT_THAT(error.reason(), HasSubstr(quoted(missing) + " does not exist"));
}

TEST(FileTrust, PluginDirectoryThatIsAFile_IsRefused) {
  const TempPluginDir dir;
  const fs::path not_a_directory = dir.write_file("plugins", "text");

  const PluginLoadError error = refusal_of(
      [&] { check_trusted_plugin_file(not_a_directory, not_a_directory / "libgood.so"); });

  EXPECT_THAT(error.reason(), HasSubstr(quoted(not_a_directory) + " is not a directory"));
}

TEST(FileTrust, MissingFile_IsReportedAsNotFound) {
  const TempPluginDir dir;
  const fs::path file = dir.path() / "libabsent.so";

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_EQ(error.file(), file);
  EXPECT_THAT(error.reason(), StartsWith("not found: no such file"));
}

TEST(FileTrust, MissingFile_NamesThePluginsTheDirectoryHolds) {
  const TempPluginDir dir;
  dir.copy_fixture("good", "order_email");
  dir.copy_fixture("good", "sales_ranking");
  dir.write_file("README", "not a plugin");

  const PluginLoadError error =
      refusal_of([&] { check_trusted_plugin_file(dir.path(), dir.path() / "liborder_emial.so"); });

  EXPECT_THAT(error.reason(), EndsWith("(the directory holds order_email, sales_ranking)"));
}

TEST(FileTrust, MissingFileInADirectoryWithoutPlugins_SaysSo) {
  const TempPluginDir dir;

  const PluginLoadError error =
      refusal_of([&] { check_trusted_plugin_file(dir.path(), dir.path() / "libabsent.so"); });

  EXPECT_THAT(error.reason(), EndsWith("(the directory holds no lib<name>.so)"));
}

TEST(FileTrust, DirectoryInPlaceOfTheFile_IsRefused) {
  const TempPluginDir dir;
  const fs::path file = dir.make_subdirectory("libgood.so");

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(), StartsWith("refused: not a regular file (it is a directory)"));
}

TEST(FileTrust, FileOwnedByAnotherUser_IsRefusedNamingTheOwner) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "changing a file's owner needs root";
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  ASSERT_EQ(::chown(file.c_str(), kForeignUid, kForeignUid), 0);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(),
              AllOf(StartsWith("refused: owned by uid 65534"), HasSubstr("chown it to root")));
}

TEST(FileTrust, DirectoryOwnedByAnotherUser_IsRefusedNamingTheOwner) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "changing a directory's owner needs root";
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  ASSERT_EQ(::chown(dir.path().c_str(), kForeignUid, kForeignUid), 0);

  const PluginLoadError error = refusal_of([&] { check_trusted_plugin_file(dir.path(), file); });

  EXPECT_THAT(error.reason(),
              HasSubstr("the plugin directory " + quoted(dir.path()) + " is owned by uid 65534"));
}

}  // namespace
}  // namespace warren::plugin
