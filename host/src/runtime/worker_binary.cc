// See worker_binary.h.
#include "runtime/worker_binary.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

namespace warren::runtime {

std::filesystem::path find_worker_binary() {
  if (const char* named = std::getenv("WARREN_WORKER_BINARY"); named != nullptr && *named) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(named, error) || ::access(named, X_OK) != 0)
      throw std::runtime_error(std::string("WARREN_WORKER_BINARY=") + named +
                               " is not an executable file");
    return named;
  }
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path dir = self.parent_path();
  const std::vector<std::filesystem::path> candidates{
      dir / "warren-worker", dir / ".." / "isolation" / "warren-worker",
      dir / ".." / "lib" / "warren" / "warren-worker"};
  std::string looked;
  for (const auto& candidate : candidates) {
    if (std::filesystem::is_regular_file(candidate, error) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate.lexically_normal();
    looked += (looked.empty() ? "" : ", ") + candidate.lexically_normal().string();
  }
  throw std::runtime_error(
      "isolation = \"process\" needs the warren-worker binary, which is not in " + looked +
      " (set WARREN_WORKER_BINARY to its path)");
}

}  // namespace warren::runtime
