// Helpers of the crash accounting tests: identities, the bytes of a file, and a small tmpfs
// mounted for one test (a full or read-only file system, as root; the test skips otherwise).
#pragma once

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "required_services.h"
#include "runtime/crash_identity.h"
#include "temp_dir.h"

namespace warren::runtime::testing {

inline CrashIdentity identity(const std::string& id, const std::string& worker = "w",
                              const std::string& queue = "q") {
  transport::InboundMessage message;
  message.queue = queue;
  message.message_id = id;
  return CrashIdentity::of(worker, message);
}

inline std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void write_bytes(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A tmpfs of `size` (e.g. "64k") at a fresh directory, unmounted (lazily) at the end.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(const std::string& size, bool read_only = false) {
    mount_point_ = dir_.path() / "fs";
    std::filesystem::create_directory(mount_point_);
    const std::string options = "size=" + size + ",mode=0700";
    mounted_ = ::mount("tmpfs", mount_point_.c_str(), "tmpfs", read_only ? MS_RDONLY : 0,
                       options.c_str()) == 0;
    error_ = mounted_ ? 0 : errno;
  }
  ~SmallTmpfs() {
    if (mounted_)
      ::umount2(mount_point_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  bool mounted() const { return mounted_; }
  std::string why_not() const { return std::strerror(error_); }
  const std::filesystem::path& path() const { return mount_point_; }

  // Writes a file until the file system is full.
  void fill() const {
    std::ofstream out(mount_point_ / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (out.write(block.data(), static_cast<std::streamsize>(block.size())))
      out.flush();
  }

 private:
  test_support::TempDir dir_;
  std::filesystem::path mount_point_;
  bool mounted_ = false;
  int error_ = 0;
};

// Skips a test whose tmpfs could not be mounted, or fails it where nothing may skip
// (WARREN_REQUIRE_SERVICES=1, as in CI, which runs as root).
#define WARREN_SKIP_UNLESS_MOUNTED(fs)                                                        \
  if (!(fs).mounted()) {                                                                      \
    WARREN_SKIP_OR_FAIL("mounting a tmpfs needs root (CI runs as root): " << (fs).why_not()); \
  }

}  // namespace warren::runtime::testing
