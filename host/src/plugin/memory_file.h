// An anonymous memory file (memfd) holding a plugin's bytes, for the dynamic loader to open as
// /proc/self/fd/N: the code that runs is then exactly the content that was read and hashed,
// whatever happens to the file on disk afterwards. A reload loads a replaced plugin from one
// (PluginLibrary::load_snapshot); the host hands one, sealed, to every worker process of a
// worker with isolation = "process" (held_plugin_file.h).
#pragma once

#include <filesystem>
#include <string>

namespace warren::plugin {

class MemoryFile {
 public:
  enum class Sealing { none, sealed };

  // Copies BYTES (the content of FILE, which errors name) into a new memory file, close-on-exec
  // and executable. Sealing::sealed then seals it (F_SEAL_WRITE, F_SEAL_SHRINK, F_SEAL_GROW,
  // F_SEAL_SEAL): nobody holding it, nor a process it is handed to, can change its content or
  // size. Throws PluginLoadError.
  static MemoryFile of(const std::filesystem::path& file, const std::string& bytes,
                       Sealing sealing = Sealing::none);

  MemoryFile() noexcept = default;
  MemoryFile(MemoryFile&& other) noexcept;
  MemoryFile& operator=(MemoryFile&& other) noexcept;
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile();

  int fd() const noexcept { return fd_; }
  // Moves the descriptor to LOWEST or above (if it is below), keeping close-on-exec. Throws
  // PluginLoadError naming FILE.
  void move_to_at_least(int lowest, const std::filesystem::path& file);
  // What the dynamic loader is given: /proc/self/fd/N.
  std::filesystem::path proc_path() const;

 private:
  explicit MemoryFile(int fd) noexcept : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace warren::plugin
