// PluginLibrary::load: one fixture .so per failure mode, each refused with its own reason; the
// good fixture loads and reports who it is.
#include "plugin/plugin_library.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <string>

#include "fixture_plugins.h"

namespace warren::plugin {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using testing::fixture_plugin_dir;
using testing::fixture_plugin_file;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::refusal_of;
using ::testing::StartsWith;
using testing::TempPluginDir;

PluginLoadError refusal_to_load(std::string_view name) {
  return refusal_of([&] { PluginLibrary::load(fixture_plugin_dir(), name); });
}

TEST(PluginLibrary, FileName_IsLibNameDotSo) {
  EXPECT_EQ(plugin_file_name("orders"), "liborders.so");
}

TEST(PluginLibrary, GoodPlugin_LoadsAndReportsItsIdentity) {
  const auto library = PluginLibrary::load(fixture_plugin_dir(), "good");

  const PluginInfo& info = library->info();
  EXPECT_EQ(info.file, fixture_plugin_file("good"));
  EXPECT_EQ(info.name, "good");
  EXPECT_EQ(info.version, "1.2.3");
  EXPECT_EQ(info.abi_major, static_cast<std::uint32_t>(WARREN_ABI_MAJOR));
  EXPECT_EQ(info.abi_minor, static_cast<std::uint32_t>(WARREN_ABI_MINOR));
  EXPECT_THAT(info.build_fingerprint,
              AllOf(StartsWith("gcc-"), HasSubstr(";std=202002"), HasSubstr(";cxx11abi=1")));
  EXPECT_NE(library->descriptor().create, nullptr);
  EXPECT_NE(library->descriptor().destroy, nullptr);
  EXPECT_NE(library->descriptor().handle, nullptr);
}

TEST(PluginLibrary, LoadFileWithoutExpectedName_AcceptsTheNameItDeclares) {
  const auto library = PluginLibrary::load_file(fixture_plugin_file("name_mismatch"), "");
  EXPECT_EQ(library->info().name, "other");
}

TEST(PluginLibrary, NameMismatch_IsRefusedNamingBothNames) {
  const PluginLoadError error = refusal_to_load("name_mismatch");

  EXPECT_EQ(error.file(), fixture_plugin_file("name_mismatch"));
  EXPECT_THAT(error.reason(),
              AllOf(HasSubstr("declares the name \"other\""),
                    HasSubstr("loaded as \"name_mismatch\""), HasSubstr("libother.so")));
}

TEST(PluginLibrary, NoEntrySymbol_IsRefusedAsNotAWarrenPlugin) {
  const PluginLoadError error = refusal_to_load("no_entry");

  EXPECT_EQ(error.file(), fixture_plugin_file("no_entry"));
  EXPECT_THAT(error.reason(), AllOf(HasSubstr("exports no warren_plugin_entry symbol"),
                                    HasSubstr("not a Warren plugin")));
}

TEST(PluginLibrary, NullDescriptor_IsRefused) {
  const PluginLoadError error = refusal_to_load("null_descriptor");
  EXPECT_THAT(error.reason(), HasSubstr("warren_plugin_entry() returned no descriptor"));
}

TEST(PluginLibrary, AbiMajorMismatch_IsRefusedWithRebuildAdvice) {
  const PluginLoadError error = refusal_to_load("abi_major_mismatch");

  EXPECT_EQ(error.file(), fixture_plugin_file("abi_major_mismatch"));
  EXPECT_EQ(error.reason(), "refused: built for Warren ABI " +
                                std::to_string(WARREN_ABI_MAJOR + 1) + ".x, this host speaks " +
                                std::to_string(WARREN_ABI_MAJOR) +
                                ".x: rebuild the plugin against this host's SDK");
}

TEST(PluginLibrary, NewerAbiMinor_IsRefused) {
  const PluginLoadError error = refusal_to_load("abi_newer_minor");

  const std::string plugin_abi =
      std::to_string(WARREN_ABI_MAJOR) + "." + std::to_string(WARREN_ABI_MINOR + 1);
  const std::string host_abi =
      std::to_string(WARREN_ABI_MAJOR) + "." + std::to_string(WARREN_ABI_MINOR);
  EXPECT_THAT(error.reason(), AllOf(HasSubstr("built for Warren ABI " + plugin_abi),
                                    HasSubstr("newer than this host's " + host_abi),
                                    HasSubstr("upgrade the host")));
}

TEST(PluginLibrary, DescriptorTooSmall_IsRefusedBeforeItsFieldsAreRead) {
  const PluginLoadError error = refusal_to_load("struct_too_small");

  EXPECT_THAT(
      error.reason(),
      AllOf(HasSubstr("its descriptor is " +
                      std::to_string(offsetof(warren_plugin_descriptor, handle)) + " bytes"),
            HasSubstr("smaller than the " + std::to_string(sizeof(warren_plugin_descriptor)) +
                      " bytes of Warren ABI 1.0")));
}

TEST(PluginLibrary, NullCreateFunction_IsRefused) {
  const PluginLoadError error = refusal_to_load("null_create");
  EXPECT_THAT(error.reason(), HasSubstr("its descriptor lacks the function(s) create"));
}

TEST(PluginLibrary, UndefinedSymbol_IsRefusedWithTheDynamicLoadersText) {
  const PluginLoadError error = refusal_to_load("missing_symbol");

  EXPECT_EQ(error.file(), fixture_plugin_file("missing_symbol"));
  EXPECT_THAT(error.reason(),
              AllOf(StartsWith("refused: the dynamic loader cannot open it: "),
                    HasSubstr("undefined symbol: warren_fixture_function_nobody_defines")));
}

TEST(PluginLibrary, FileThatIsNotALibrary_IsRefusedWithTheDynamicLoadersText) {
  const TempPluginDir dir;
  dir.write_file("libgarbage.so", std::string(256, 'x'));

  const PluginLoadError error = refusal_of([&] { PluginLibrary::load(dir.path(), "garbage"); });

  EXPECT_THAT(error.reason(),
              AllOf(StartsWith("refused: the dynamic loader cannot open it: "), HasSubstr("ELF")));
}

TEST(PluginLibrary, WorldWritableFile_IsRefusedBeforeTheLoaderOpensIt) {
  const TempPluginDir dir;
  const fs::path file = dir.write_file("libgarbage.so", std::string(256, 'x'));
  TempPluginDir::chmod(file, 0666);

  const PluginLoadError error = refusal_of([&] { PluginLibrary::load(dir.path(), "garbage"); });

  // Had it been opened, the loader would have complained about the ELF header instead.
  EXPECT_THAT(error.reason(),
              AllOf(HasSubstr("writable by group and others"), Not(HasSubstr("ELF"))));
}

TEST(PluginLibrary, WorldWritableCopyOfAGoodPlugin_IsRefused) {
  const TempPluginDir dir;
  TempPluginDir::chmod(dir.copy_fixture("good"), 0666);

  const PluginLoadError error = refusal_of([&] { PluginLibrary::load(dir.path(), "good"); });

  EXPECT_EQ(error.file(), dir.path() / "libgood.so");
  EXPECT_THAT(error.reason(), StartsWith("refused: writable by group and others (mode 0666)"));
}

TEST(PluginLibrary, LoadFile_AppliesTheTrustChecksToTheFilesOwnDirectory) {
  const TempPluginDir dir;
  const fs::path file = dir.copy_fixture("good");
  TempPluginDir::chmod(dir.path(), 0777);

  const PluginLoadError error = refusal_of([&] { PluginLibrary::load_file(file, "good"); });

  EXPECT_THAT(error.reason(), HasSubstr("is writable by group and others (mode 0777)"));
}

TEST(PluginLibrary, MissingPlugin_IsReportedAsNotFound) {
  const PluginLoadError error = refusal_to_load("absent");

  EXPECT_EQ(error.file(), fixture_plugin_dir() / "libabsent.so");
  EXPECT_THAT(error.reason(), StartsWith("not found: no such file"));
}

TEST(PluginLibrary, NameWithASlash_IsRefusedAsNotAPluginName) {
  const PluginLoadError error = refusal_to_load("../fixtures/plugins/good");
  EXPECT_THAT(error.reason(), HasSubstr("is not a plugin name"));
}

TEST(PluginLibrary, EmptyName_IsRefusedAsNotAPluginName) {
  const PluginLoadError error = refusal_to_load("");
  EXPECT_THAT(error.reason(), HasSubstr("\"\" is not a plugin name"));
}

TEST(PluginLibrary, RelativePluginDirectory_IsRefused) {
  const PluginLoadError error = refusal_of([] { PluginLibrary::load("plugins", "good"); });
  EXPECT_THAT(error.reason(), HasSubstr("is not an absolute path"));
}

}  // namespace
}  // namespace warren::plugin
