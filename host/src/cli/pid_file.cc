// See pid_file.h.
#include "cli/pid_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace warren::cli {

PidFile::PidFile(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.empty())
    return;
  const std::filesystem::path temporary = path_.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << ::getpid() << "\n";
    if (!out.flush())
      throw std::runtime_error("[host] pid_file " + path_.string() +
                               ": cannot write it: " + std::strerror(errno));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path_, error);
  if (error)
    throw std::runtime_error("[host] pid_file " + path_.string() + ": " + error.message());
}

PidFile::~PidFile() {
  if (path_.empty())
    return;
  std::string why;
  if (read_pid_file(path_, why) == ::getpid()) {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
}

std::optional<pid_t> read_pid_file(const std::filesystem::path& path, std::string& why) {
  std::ifstream in(path);
  if (!in) {
    why = path.string() + ": " + std::strerror(errno);
    return std::nullopt;
  }
  long long pid = 0;
  if (!(in >> pid) || pid <= 1) {
    why = path.string() + ": holds no process id";
    return std::nullopt;
  }
  return static_cast<pid_t>(pid);
}

}  // namespace warren::cli
