// Files that survive a crash or a power loss, written the POSIX way: the content goes to a
// temporary name beside the final one and is flushed; the caller then gives it its final name
// (rename(2) to replace, link(2) to refuse replacing) and flushes the directory.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace livraria {

std::system_error io_error(int error, const std::string& what);

// Creates an empty, uniquely named file next to `final_path`; returns its descriptor (-1 with
// errno set on failure) and fills `temp_path`.
int create_temp_beside(const std::filesystem::path& final_path, std::string& temp_path);

// A complete, flushed file with `content` and `mode` under a temporary name beside
// `final_path`. Its temporary name is removed when this object goes: after the caller's rename
// or link, only the final name remains; after a failure, nothing. Throws std::system_error
// naming the file (`what` says what it holds, e.g. "e-mail file").
class FlushedTempFile {
 public:
  FlushedTempFile(const std::filesystem::path& final_path, std::string_view content, mode_t mode,
                  std::string_view what);
  ~FlushedTempFile();
  FlushedTempFile(const FlushedTempFile&) = delete;
  FlushedTempFile& operator=(const FlushedTempFile&) = delete;

  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// Flushes `directory` so that a name just created in it survives a power loss. Throws
// std::system_error.
void sync_directory(const std::filesystem::path& directory);

}  // namespace livraria
