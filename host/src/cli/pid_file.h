// [host] pid_file: `warren run` writes its process id there while it runs, so that
// `warren reload -c FILE` can find it outside systemd (under systemd, $MAINPID says it).
#pragma once

#include <sys/types.h>
#include <filesystem>
#include <optional>
#include <string>

namespace warren::cli {

class PidFile {
 public:
  // Writes this process's id to `path` (replacing the file in one rename). Empty path: nothing.
  // Throws std::runtime_error naming the file and the OS error.
  explicit PidFile(std::filesystem::path path);
  ~PidFile();  // removes the file, when it still holds this process's id
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

 private:
  std::filesystem::path path_;
};

// The process id in `path`: std::nullopt with `why` set when the file is missing or holds no
// process id.
std::optional<pid_t> read_pid_file(const std::filesystem::path& path, std::string& why);

}  // namespace warren::cli
