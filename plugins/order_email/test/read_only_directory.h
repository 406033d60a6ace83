// ReadOnlyDirectory: makes a directory read-only for the calling thread while it lives, also when
// the test runs as root, as CI does. Permission bits do not stop root (a chmod 0500 directory
// stays writable for it), so as root the directory gets a read-only bind mount onto itself in a
// private mount namespace of this thread's own (unshare(CLONE_NEWNS)): writes fail with EROFS,
// nothing outside the test sees the mount, and the destructor returns the thread to the original
// namespace. Other users get mode 0500. Throws std::system_error when neither can be set up (root
// without CAP_SYS_ADMIN, e.g. in a restricted container): the test fails, it does not skip.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

namespace livraria::test {

class ReadOnlyDirectory {
 public:
  explicit ReadOnlyDirectory(std::filesystem::path directory) : directory_(std::move(directory)) {
    if (::geteuid() != 0) {
      std::filesystem::permissions(
          directory_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
      return;
    }
    original_namespace_ = ::open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
    check(original_namespace_ >= 0, "open /proc/thread-self/ns/mnt");
    try {
      const char* dir = directory_.c_str();
      check(::unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS)");
      // Private first: the bind mount must not propagate back to the machine's namespace.
      check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "make / private");
      check(::mount(dir, dir, nullptr, MS_BIND, nullptr) == 0, "bind-mount the directory");
      check(::mount(nullptr, dir, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0,
            "remount the bind read-only");
    } catch (...) {
      restore();
      throw;
    }
  }

  ~ReadOnlyDirectory() { restore(); }

  ReadOnlyDirectory(const ReadOnlyDirectory&) = delete;
  ReadOnlyDirectory& operator=(const ReadOnlyDirectory&) = delete;

 private:
  void restore() noexcept {
    if (original_namespace_ < 0) {
      std::error_code ignored;
      std::filesystem::permissions(directory_, std::filesystem::perms::owner_all, ignored);
      return;
    }
    ::umount2(directory_.c_str(), MNT_DETACH);
    ::setns(original_namespace_, CLONE_NEWNS);
    ::close(original_namespace_);
  }

  void check(bool ok, const std::string& step) const {
    if (!ok) {
      throw std::system_error(errno, std::generic_category(),
                              "ReadOnlyDirectory(" + directory_.string() + "): " + step +
                                  " failed (root needs CAP_SYS_ADMIN for a read-only bind mount)");
    }
  }

  std::filesystem::path directory_;
  int original_namespace_ = -1;
};

}  // namespace livraria::test
