// StateFile with POSIX calls: mkstemp + write + fsync + rename(2) + fsync of the directory.
#include "state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace livraria {
namespace {

std::system_error io_error(int error, const std::string& what) {
  return std::system_error(error, std::generic_category(), what);
}

void write_all(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR)
        continue;
      throw io_error(errno, "cannot write ranking state " + path);
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
}

}  // namespace

Ranking StateFile::load() const {
  std::error_code error;
  if (!std::filesystem::exists(path_, error)) {
    const auto directory = path_.has_parent_path() ? path_.parent_path() : ".";
    if (!std::filesystem::is_directory(directory, error)) {
      throw std::invalid_argument("state_file '" + path_.string() + "': directory '" +
                                  directory.string() + "' does not exist: create it first");
    }
    return Ranking{};
  }
  std::ifstream in(path_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    throw std::invalid_argument("state_file '" + path_.string() + "' cannot be read");
  }
  try {
    return Ranking::from_json(nlohmann::json::parse(text.str()));
  } catch (const std::exception& e) {
    throw std::invalid_argument("state_file '" + path_.string() +
                                "' does not hold a sales ranking: " + e.what() +
                                "; fix it or move it away to start from an empty ranking");
  }
}

void StateFile::save(const Ranking& ranking) const {
  const std::string content = ranking.to_json().dump() + "\n";
  const std::filesystem::path directory = path_.has_parent_path() ? path_.parent_path() : ".";
  std::string temp = (directory / ("." + path_.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0)
    throw io_error(errno, "cannot create a temporary file beside " + path_.string());
  temp.assign(name.data());

  try {
    write_all(fd, content, temp);
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
      throw io_error(errno, "cannot flush ranking state " + temp);
    }
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int close_error = errno;
    ::unlink(temp.c_str());
    throw io_error(close_error, "cannot flush ranking state " + temp);
  }
  if (::rename(temp.c_str(), path_.c_str()) != 0) {
    const int rename_error = errno;
    ::unlink(temp.c_str());
    throw io_error(rename_error, "cannot replace ranking state " + path_.string());
  }
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0 || ::fsync(dir_fd) != 0) {
    const int sync_error = errno;
    if (dir_fd >= 0)
      ::close(dir_fd);
    throw io_error(sync_error, "cannot flush directory " + directory.string());
  }
  ::close(dir_fd);
}

}  // namespace livraria
