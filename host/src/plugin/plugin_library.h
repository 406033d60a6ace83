// A plugin `.so`, loaded safely and kept alive.
//
// Loading refuses, each time saying which file and why (PluginLoadError): a file that fails
// check_trusted_plugin_file (file_trust.h), a file the dynamic loader cannot open (the dlerror()
// text is kept), a missing entry symbol, a null descriptor, a descriptor too small for ABI 1.0,
// an ABI major that differs from the host's, a newer ABI minor, a missing name or version, a name
// that differs from the one asked for, or a missing create/destroy/handle function. The ABI
// fields are checked before anything else in the descriptor is read.
//
// The library is opened with RTLD_NOW | RTLD_LOCAL and never unloaded while anything from it
// lives: every HandlerInstance holds a shared_ptr to its PluginLibrary (see Boost.DLL's
// "refcounting" tutorial). A reload (runtime/host_reload.cc) loads a replaced file as a snapshot
// of its content (load_snapshot) beside the old library, which is unloaded when the last
// instance and message of the old version are gone.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "plugin/plugin_load_error.h"
#include "warren/abi.h"

namespace warren::plugin {

struct PluginInfo {
  std::filesystem::path file;
  std::string name;
  std::string version;
  std::string build_fingerprint;
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;
  std::string content_hash;  // plugin_content.h: what a reload compares
};

class PluginLibrary {
 public:
  // Loads lib<name>.so from `plugin_dir`. Throws PluginLoadError.
  static std::shared_ptr<PluginLibrary> load(const std::filesystem::path& plugin_dir,
                                             std::string_view name);
  // Loads one file (which must still pass every check, its own directory standing for the
  // plugin directory); `expected_name` empty: any name.
  static std::shared_ptr<PluginLibrary> load_file(const std::filesystem::path& file,
                                                  std::string_view expected_name);

  // Loads a plugin that a host checked and holds for a worker process (held_plugin_file.h) from
  // `held` (/proc/self/fd/N, the held memory file), naming `file` (where the host read it) in
  // every message. No file checks here: they were the host's, on `file` (a memory file has no
  // directory, owner or mode to check). `expected_name` as for load(). Throws PluginLoadError.
  static std::shared_ptr<PluginLibrary> load_held(const std::filesystem::path& file,
                                                  std::string_view expected_name,
                                                  const std::filesystem::path& held);

  // Loads lib<name>.so from `plugin_dir` as the content it has now, whatever the dynamic loader
  // has already mapped under that path (it would hand back the old library for the same path,
  // or the same inode): the file passes the same checks, then its bytes, read once and hashed,
  // are loaded from an anonymous memory file (memfd). Throws PluginLoadError.
  static std::shared_ptr<PluginLibrary> load_snapshot(const std::filesystem::path& plugin_dir,
                                                      std::string_view name);

  virtual ~PluginLibrary() = default;
  virtual const PluginInfo& info() const noexcept = 0;
  // A copy of the validated descriptor (fields a plugin built for an older minor lacks are
  // zero); its pointers point into the library, valid as long as this object lives.
  virtual const warren_plugin_descriptor& descriptor() const noexcept = 0;
};

// The file name the host looks for: lib<name>.so.
std::string plugin_file_name(std::string_view name);

}  // namespace warren::plugin
