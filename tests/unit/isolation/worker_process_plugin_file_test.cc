// WorkerProcess and the plugin file: every child loads the bytes the host checked and read
// (plugin/held_plugin_file.h), so a file replaced or emptied on disk afterwards changes nothing for
// a child started later (after a crash); and a plugin that declares another name than the one
// the config gives it is refused with the words of isolation = "thread".
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "isolation/worker_process.h"
#include "worker_process_fakes.h"

namespace warren::isolation {
namespace {

using namespace warren::isolation::test_host;
using ::testing::HasSubstr;

// A plugin directory of its own (0700, this user's) holding a copy of the scripted plugin.
class PluginCopy {
 public:
  PluginCopy() {
    std::string pattern = (std::filesystem::temp_directory_path() / "warren-held-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    std::filesystem::copy_file(WARREN_SCRIPTED_PLUGIN_PATH, file());
    std::filesystem::permissions(file(), std::filesystem::perms(0755));
  }
  ~PluginCopy() { std::filesystem::remove_all(dir_); }
  PluginCopy(const PluginCopy&) = delete;
  PluginCopy& operator=(const PluginCopy&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path file() const { return dir_ / "libscripted.so"; }

 private:
  std::filesystem::path dir_;
};

WorkerProcessOptions options_for(const plugin::HeldPluginFile& held, std::string name = "") {
  WorkerProcessOptions held_options = options();
  held_options.plugin_path = held.file().string();
  held_options.plugin_fd = held.fd();
  held_options.plugin_name = std::move(name);
  return held_options;
}

TEST(WorkerProcessPluginFile, TheFileEmptiedOnDiskAfterItWasHeld_ChildrenStillRunTheHeldBytes) {
  PluginCopy copy;
  const plugin::HeldPluginFile held(copy.dir(), copy.file());
  std::ofstream(copy.file(), std::ios::trunc).close();  // an upgrade gone wrong, or a new file
  ASSERT_EQ(std::filesystem::file_size(copy.file()), 0u);

  FakeWorker worker;
  WorkerProcess process(worker_binary(), options_for(held, "scripted"), worker);
  process.start();
  EXPECT_EQ(process.hello().plugin_name, "scripted");
  FakeMessage crashed, after;
  ASSERT_EQ(run(process, with_action("segfault"), crashed).value_or(WorkerDeath{}).reason,
            "SIGSEGV");
  process.start();  // the next child, as after a crash in the host
  EXPECT_EQ(process.hello().plugin_name, "scripted");
  EXPECT_EQ(run(process, with_action("ack"), after), std::nullopt);
  ASSERT_EQ(after.outcomes.size(), 1u);
  EXPECT_EQ(after.outcomes[0].kind, host_abi::ReportedOutcome::Kind::ack);
  process.stop(std::chrono::steady_clock::now() + std::chrono::seconds(5));
}

TEST(WorkerProcessPluginFile, APluginThatDeclaresAnotherName_IsRefusedAsInThreadMode) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options_for(scripted_plugin(), "orders"), worker);
  try {
    process.start();
    FAIL() << "a plugin named \"scripted\" started as \"orders\"";
  } catch (const WorkerStartError& error) {
    EXPECT_THAT(error.what(), HasSubstr(WARREN_SCRIPTED_PLUGIN_PATH));
    EXPECT_THAT(error.what(), HasSubstr("refused: it declares the name \"scripted\" but was "
                                        "loaded as \"orders\"; name the file libscripted.so"));
  }
  EXPECT_FALSE(process.running());
}

}  // namespace
}  // namespace warren::isolation
