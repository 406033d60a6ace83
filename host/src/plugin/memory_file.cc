// See memory_file.h.
#include "plugin/memory_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "plugin/plugin_load_error.h"

namespace warren::plugin {
namespace {

int create_memory_file(const std::filesystem::path& file, unsigned int flags) {
  // MFD_EXEC: a kernel with vm.memfd_noexec (6.3+) may otherwise make it unexecutable; an older
  // one refuses the unknown flag (EINVAL), and there every memory file is executable.
#ifdef MFD_EXEC
  const int fd = ::memfd_create(file.filename().c_str(), flags | MFD_EXEC);
  if (fd >= 0 || errno != EINVAL)
    return fd;
#endif
  return ::memfd_create(file.filename().c_str(), flags);
}

}  // namespace

MemoryFile MemoryFile::of(const std::filesystem::path& file, const std::string& bytes,
                          Sealing sealing) {
  const unsigned int flags =
      MFD_CLOEXEC |
      (sealing == Sealing::sealed ? static_cast<unsigned int>(MFD_ALLOW_SEALING) : 0U);
  MemoryFile memory(create_memory_file(file, flags));
  if (memory.fd() < 0)
    throw PluginLoadError(file, std::string("refused: cannot make a memory file to load it "
                                            "from: ") +
                                    std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(memory.fd(), bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw PluginLoadError(
          file, std::string("refused: cannot copy it into a memory file: ") + std::strerror(errno));
    written += static_cast<std::size_t>(n);
  }
  if (sealing == Sealing::sealed &&
      ::fcntl(memory.fd(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) !=
          0)
    throw PluginLoadError(
        file, std::string("refused: cannot seal its memory file: ") + std::strerror(errno));
  return memory;
}

MemoryFile::MemoryFile(MemoryFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

MemoryFile& MemoryFile::operator=(MemoryFile&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

MemoryFile::~MemoryFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

void MemoryFile::move_to_at_least(int lowest, const std::filesystem::path& file) {
  if (fd_ >= lowest)
    return;
  const int moved = ::fcntl(fd_, F_DUPFD_CLOEXEC, lowest);
  if (moved < 0)
    throw PluginLoadError(file, std::string("refused: cannot move its memory file's descriptor: ") +
                                    std::strerror(errno));
  ::close(std::exchange(fd_, moved));
}

std::filesystem::path MemoryFile::proc_path() const {
  return "/proc/self/fd/" + std::to_string(fd_);
}

}  // namespace warren::plugin
