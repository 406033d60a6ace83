// A plugin file as the host checked it, for a worker with isolation = "process": its bytes, read
// once, in a sealed memory file (memory_file.h) that every worker process of the worker gets as a
// descriptor and loads (PluginLibrary::load_held). A package upgrade that replaces the file on
// disk therefore cannot make a later child (one restarted after a crash) run another version than
// the one the host checked and hashed, nor mix versions between children; the new file is read
// by a reload or a restart. The host never maps or runs the bytes itself.
#pragma once

#include <filesystem>
#include <string>

#include "plugin/memory_file.h"

namespace warren::plugin {

// The lowest descriptor number the held file is kept at: above the ones a worker process is
// given (its socket at 3, this file at 4: isolation/worker_spawn.h).
inline constexpr int kAboveWorkerDescriptors = 5;

class HeldPluginFile {
 public:
  // Checks FILE as the loader does before it opens one (check_trusted_plugin_file: PLUGIN_DIR is
  // the plugin directory), then reads it once. Throws PluginLoadError.
  HeldPluginFile(const std::filesystem::path& plugin_dir, const std::filesystem::path& file);

  // Where it was read: what messages and logs name.
  const std::filesystem::path& file() const noexcept { return file_; }
  // plugin_content.h's hash of the bytes held.
  const std::string& content_hash() const noexcept { return content_hash_; }
  // The sealed memory file, close-on-exec (a child gets a copy: worker_spawn.h).
  int fd() const noexcept { return memory_.fd(); }

 private:
  std::filesystem::path file_;
  std::string content_hash_;
  MemoryFile memory_;
};

}  // namespace warren::plugin
