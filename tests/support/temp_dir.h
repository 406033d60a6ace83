// A fresh directory under $TMPDIR for one test, removed with everything in it afterwards.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace warren::test_support {

class TempDir {
 public:
  // Under `base` (default: $TMPDIR or /tmp).
  explicit TempDir(const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
    std::string pattern = (base / "warren-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory from " + pattern);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // On tmpfs when the machine has one (fsync is free there): for tests that save thousands of
  // times and are about locking, not disks.
  static TempDir in_memory() {
    const std::filesystem::path shm = "/dev/shm";
    std::error_code error;
    if (std::filesystem::is_directory(shm, error) && ::access(shm.c_str(), W_OK) == 0) {
      return TempDir(shm);
    }
    return TempDir();
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace warren::test_support
