// MailSpool with POSIX calls: mkstemp + write + fsync, then link(2) (atomic, refuses to replace),
// then fsync of the directory so the new name survives a power loss.
#include "mail_spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace livraria {
namespace {

std::system_error io_error(int error, const std::string& what) {
  return std::system_error(error, std::generic_category(), what);
}

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

// Creates an empty, uniquely named file next to `final_path`; returns its descriptor and fills
// `temp_path`.
int create_temp_beside(const std::filesystem::path& final_path, std::string& temp_path) {
  temp_path =
      (final_path.parent_path() / ("." + final_path.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(temp_path.begin(), temp_path.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  temp_path.assign(name.data());
  return fd;
}

void write_all(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR)
        continue;
      throw io_error(errno, "cannot write e-mail file " + path);
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
}

void sync_directory(const std::filesystem::path& directory) {
  Fd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0) {
    throw io_error(errno, "cannot flush directory " + directory.string());
  }
}

}  // namespace

MailSpool::MailSpool(std::filesystem::path directory) : directory_(std::move(directory)) {
  std::error_code error;
  const auto status = std::filesystem::status(directory_, error);
  if (!std::filesystem::exists(status)) {
    throw std::invalid_argument("out_dir '" + directory_.string() +
                                "' does not exist: create it, or point out_dir at the mail spool");
  }
  if (!std::filesystem::is_directory(status)) {
    throw std::invalid_argument("out_dir '" + directory_.string() + "' is not a directory");
  }
  std::string probe;
  const int fd = create_temp_beside(directory_ / "write-probe", probe);
  if (fd < 0) {
    const std::error_code cause(errno, std::generic_category());
    throw std::invalid_argument("out_dir '" + directory_.string() + "' is not writable (" +
                                cause.message() + "): give the worker's user write access to it");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

MailSpool::Delivery MailSpool::write_once(std::string_view file_name,
                                          std::string_view content) const {
  const std::filesystem::path final_path = directory_ / file_name;
  if (::access(final_path.c_str(), F_OK) == 0)
    return Delivery::already_present;

  std::string temp_path;
  Fd fd(create_temp_beside(final_path, temp_path));
  if (fd.get() < 0)
    throw io_error(errno, "cannot create a temporary file in " + directory_.string());
  struct TempRemover {
    const std::string& path;
    ~TempRemover() { ::unlink(path.c_str()); }  // after link(2) only the final name remains
  } remove_temp{temp_path};

  write_all(fd.get(), content, temp_path);
  if (::fchmod(fd.get(), 0640) != 0 || ::fsync(fd.get()) != 0 || fd.close() != 0) {
    throw io_error(errno, "cannot flush e-mail file " + temp_path);
  }
  if (::link(temp_path.c_str(), final_path.c_str()) != 0) {
    if (errno == EEXIST)
      return Delivery::already_present;  // a concurrent duplicate won
    throw io_error(errno, "cannot publish e-mail file " + final_path.string());
  }
  sync_directory(directory_);
  return Delivery::written;
}

}  // namespace livraria
