// plugin_file_hash: the hash of a plugin file read in pieces is the hash of its bytes read whole
// (a reload compares the two kinds), whatever the file's size against the piece; and
// read_plugin_content reads every byte.
#include "plugin/plugin_content.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "plugin/plugin_load_error.h"

namespace warren::plugin {
namespace {

namespace fs = std::filesystem;

class PluginFileHashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "warren-plugin-hash.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path file = dir_ / name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

  fs::path dir_;
};

TEST_F(PluginFileHashTest, AnyLength_HashesAsTheWholeBytesDo) {
  // Empty, shorter than a piece, exactly one piece, several pieces and a tail.
  for (const std::size_t length : {0UL, 7UL, 16UL * 1024, 40000UL}) {
    std::string bytes(length, '\0');
    for (std::size_t i = 0; i < length; ++i)
      bytes[i] = static_cast<char>((i * 131) % 251);
    const fs::path file = write("lib" + std::to_string(length) + ".so", bytes);
    EXPECT_EQ(plugin_file_hash(file), plugin_content_hash(bytes)) << length << " bytes";
    const PluginContent whole = read_plugin_content(file);
    EXPECT_EQ(whole.bytes, bytes) << length << " bytes";
    EXPECT_EQ(plugin_file_hash(file), whole.hash) << length << " bytes";
  }
}

TEST_F(PluginFileHashTest, AMissingFile_IsRefusedNamingIt) {
  const fs::path file = dir_ / "libgone.so";
  try {
    plugin_file_hash(file);
    FAIL() << "hashed a missing file";
  } catch (const PluginLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("libgone.so"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot read it"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace warren::plugin
