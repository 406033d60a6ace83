// A plugin `.so`, loaded safely and kept alive.
//
// Loading refuses, each time saying which file and why: a path outside the absolute plugin
// directory, a symlink, a file or directory writable by group or others, a file owned by neither
// root nor the running user, a missing entry symbol, an ABI major that differs from the host's,
// a newer ABI minor, a descriptor too small, or a name that differs from the one asked for.
//
// The library is opened with RTLD_NOW | RTLD_LOCAL and never unloaded while anything from it
// lives: every HandlerInstance holds a shared_ptr to its PluginLibrary (see Boost.DLL's
// "refcounting" tutorial); in practice libraries live until the process exits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "warren/abi.h"

namespace warren::plugin {

class PluginLoadError : public std::runtime_error {
 public:
  PluginLoadError(std::filesystem::path file, std::string reason);
  const std::filesystem::path& file() const noexcept { return file_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::filesystem::path file_;
  std::string reason_;
};

struct PluginInfo {
  std::filesystem::path file;
  std::string name;
  std::string version;
  std::string build_fingerprint;
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;
};

class PluginLibrary {
 public:
  // Loads lib<name>.so from `plugin_dir`. Throws PluginLoadError.
  static std::shared_ptr<PluginLibrary> load(const std::filesystem::path& plugin_dir,
                                             std::string_view name);
  // Loads one file (which must still pass every check); `expected_name` empty: any name.
  static std::shared_ptr<PluginLibrary> load_file(const std::filesystem::path& file,
                                                  std::string_view expected_name);

  virtual ~PluginLibrary() = default;
  virtual const PluginInfo& info() const noexcept = 0;
  virtual const warren_plugin_descriptor& descriptor() const noexcept = 0;
};

// The file name the host looks for: lib<name>.so.
std::string plugin_file_name(std::string_view name);

}  // namespace warren::plugin
