// See durable_file.h.
#include "durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace livraria {
namespace {

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  // Closes now, reporting the error close(2) may carry (e.g. a deferred write error on NFS).
  int close() noexcept {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

void write_all(int fd, std::string_view content, const std::string& what) {
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR)
        continue;
      throw io_error(errno, "cannot write " + what);
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
}

}  // namespace

std::system_error io_error(int error, const std::string& what) {
  return std::system_error(error, std::generic_category(), what);
}

int create_temp_beside(const std::filesystem::path& final_path, std::string& temp_path) {
  // Appended rather than `"." + name + ...`: GCC 12 at -O3 reports a false -Wrestrict inside
  // std::string's insert for that form.
  std::string temp_name = ".";
  temp_name += final_path.filename().string();
  temp_name += ".tmp.XXXXXX";
  temp_path = (final_path.parent_path() / temp_name).string();
  std::vector<char> name(temp_path.begin(), temp_path.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  temp_path.assign(name.data());
  return fd;
}

FlushedTempFile::FlushedTempFile(const std::filesystem::path& final_path, std::string_view content,
                                 mode_t mode, std::string_view what) {
  Fd fd(create_temp_beside(final_path, path_));
  if (fd.get() < 0)
    throw io_error(errno, "cannot create a temporary file beside " + final_path.string());
  try {
    const std::string described = std::string(what) + " " + path_;
    write_all(fd.get(), content, described);
    if (::fchmod(fd.get(), mode) != 0 || ::fsync(fd.get()) != 0 || fd.close() != 0)
      throw io_error(errno, "cannot flush " + described);
  } catch (...) {
    ::unlink(path_.c_str());  // the destructor does not run for a constructor that throws
    throw;
  }
}

FlushedTempFile::~FlushedTempFile() {
  ::unlink(path_.c_str());
}

void sync_directory(const std::filesystem::path& directory) {
  Fd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0)
    throw io_error(errno, "cannot flush directory " + directory.string());
}

}  // namespace livraria
