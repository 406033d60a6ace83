// Where the fixture plugins live (tests/fixtures, built into WARREN_FIXTURE_PLUGIN_DIR), and a
// temporary plugin directory for tests that must break a copy of one (chmod, symlink, chown)
// without touching the build tree.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "plugin/plugin_library.h"
#include "temp_dir.h"

namespace warren::plugin::testing {

inline std::filesystem::path fixture_plugin_dir() {
  return WARREN_FIXTURE_PLUGIN_DIR;
}

inline std::filesystem::path fixture_plugin_file(std::string_view name) {
  return fixture_plugin_dir() / plugin_file_name(name);
}

// A fresh directory (mode 0755) removed with everything in it at the end of the test.
class TempPluginDir {
 public:
  TempPluginDir() : path_(directory_.path()) { chmod(path_, 0755); }

  const std::filesystem::path& path() const noexcept { return path_; }

  // Copies fixture lib<fixture>.so to <dir>/<relative_dir>/lib<as_name>.so, mode 0755.
  std::filesystem::path copy_fixture(std::string_view fixture, std::string_view as_name,
                                     const std::filesystem::path& relative_dir = {}) const {
    const std::filesystem::path target = path_ / relative_dir / plugin_file_name(as_name);
    std::filesystem::copy_file(fixture_plugin_file(fixture), target);
    chmod(target, 0755);
    return target;
  }
  std::filesystem::path copy_fixture(std::string_view fixture) const {
    return copy_fixture(fixture, fixture);
  }

  std::filesystem::path make_subdirectory(const std::filesystem::path& relative) const {
    const std::filesystem::path directory = path_ / relative;
    std::filesystem::create_directories(directory);
    chmod(directory, 0755);
    return directory;
  }

  std::filesystem::path write_file(std::string_view name, std::string_view content) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << content;
    chmod(file, 0755);
    return file;
  }

  static void chmod(const std::filesystem::path& path, mode_t mode) {
    if (::chmod(path.c_str(), mode) != 0) {
      throw std::system_error(errno, std::generic_category(), "chmod " + path.string());
    }
  }

 private:
  test_support::TempDir directory_;
  std::filesystem::path path_;  // directory_'s
};

// Runs `action`, which must throw PluginLoadError, and returns the error for inspection.
template <class Action>
PluginLoadError refusal_of(Action&& action) {
  try {
    action();
  } catch (const PluginLoadError& error) {
    return error;
  }
  throw std::logic_error("expected a PluginLoadError, but nothing was thrown");
}

// The uid used as "someone else" (nobody); chown to it needs root.
constexpr uid_t kForeignUid = 65534;

}  // namespace warren::plugin::testing
