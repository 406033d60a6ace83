// See worker_cgroups.h.
#include "isolation/worker_cgroups.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

namespace warren::isolation {

namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& file) {
  std::ifstream in(file);
  if (!in)
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One write(2), as the kernel wants a cgroup file's value. O_CREAT and O_TRUNC change nothing on
// a cgroup file system (its files exist and have no size); they let a plain directory tree stand
// in for one in tests.
void write_text(const fs::path& file, const std::string& text) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "cannot open " + file.string());
  const ssize_t written = ::write(fd, text.data(), text.size());
  const int error = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size()))
    throw std::system_error(written < 0 ? error : EIO, std::generic_category(),
                            "cannot write '" + text + "' to " + file.string());
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream words(text);
  for (std::string each; words >> each;) {
    if (each == word)
      return true;
  }
  return false;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

// "/system.slice/warren.service" from /proc/self/cgroup's "0::/system.slice/warren.service".
std::optional<std::string> unified_path(const std::string& cgroup_file) {
  std::istringstream lines(cgroup_file);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("0::"))
      return line.substr(3);
  }
  return std::nullopt;
}

// The mount point of the first cgroup2 file system in /proc/self/mountinfo (fields: id parent
// major:minor root mount-point options... - type source super-options).
std::optional<fs::path> cgroup2_mount() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    const auto separator = line.find(" - ");
    if (separator == std::string::npos || !line.substr(separator + 3).starts_with("cgroup2 "))
      continue;
    std::istringstream fields(line.substr(0, separator));
    std::string field;
    for (int i = 0; i < 5 && fields >> field; ++i) {
    }
    return fs::path(field);
  }
  return std::nullopt;
}

// A worker's name as one plain directory name: a config may name a worker "orders/eu" or "..".
std::string directory_safe(const std::string& name) {
  std::string safe = name;
  for (char& c : safe) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    if (!plain)
      c = '_';
  }
  return safe;
}

// The pids in CGROUP_PROCS other than SELF, comma-separated ("" when none).
std::string other_processes(const fs::path& cgroup_procs, pid_t self) {
  std::istringstream pids(read_text(cgroup_procs).value_or(""));
  std::string others;
  for (std::string pid; pids >> pid;) {
    if (pid != std::to_string(self))
      others += (others.empty() ? "" : ", ") + pid;
  }
  return others;
}

// The host's cgroup made ready for leaves (see worker_cgroups.h), or nothing with WHY_NOT.
std::optional<fs::path> prepared_cgroup(const CgroupLocation& where, std::string& why_not) {
  const fs::path& root = where.root;
  const std::optional<std::string> path = unified_path(where.cgroup_file);
  if (!path) {
    why_not = "this process is in no cgroup v2 hierarchy (no 0:: line in /proc/self/cgroup)";
    return std::nullopt;
  }
  const fs::path relative = fs::path(*path).relative_path();
  const fs::path dir = relative.empty() ? root : root / relative;
  const std::optional<std::string> controllers = read_text(dir / "cgroup.controllers");
  if (!controllers) {
    why_not = dir.string() + " is not a cgroup v2 directory (no cgroup.controllers)";
    return std::nullopt;
  }
  // Only the system's root cgroup has no cgroup.type (a container's namespace root has one).
  if (!fs::exists(dir / "cgroup.type")) {
    why_not = "the host runs in the system's root cgroup " + dir.string() +
              ", which is not delegated to it (systemd: Delegate=yes)";
    return std::nullopt;
  }
  if (!has_word(*controllers, "memory")) {
    why_not = "the memory controller is not available in " + dir.string() +
              " (cgroup.controllers: '" + trimmed(*controllers) + "')";
    return std::nullopt;
  }
  if (::access(dir.c_str(), W_OK) != 0 ||
      ::access((dir / "cgroup.subtree_control").c_str(), W_OK) != 0) {
    why_not = "the cgroup " + dir.string() +
              " is not delegated to this process (not writable; systemd: Delegate=yes, and no "
              "ProtectControlGroups=yes)";
    return std::nullopt;
  }
  try {
    if (!has_word(read_text(dir / "cgroup.subtree_control").value_or(""), "memory")) {
      // No internal processes: the host leaves its cgroup for a leaf of it first, if the
      // cgroup is its own (not a shell's or a terminal's, which would stay behind).
      const std::string others = other_processes(dir / "cgroup.procs", where.self);
      if (!others.empty()) {
        why_not = "the cgroup " + dir.string() + " holds other processes than the host (" + others +
                  "): give the host a cgroup of its own (systemd: Delegate=yes)";
        return std::nullopt;
      }
      if (!trimmed(read_text(dir / "cgroup.procs").value_or("")).empty()) {
        std::error_code ignored;
        fs::create_directory(dir / "host", ignored);
        write_text(dir / "host" / "cgroup.procs", std::to_string(where.self));
      }
      write_text(dir / "cgroup.subtree_control", "+memory");
    }
  } catch (const std::system_error& error) {
    why_not = std::string("cannot enable the memory controller below ") + dir.string() + ": " +
              error.what();
    return std::nullopt;
  }
  return dir;
}

}  // namespace

CgroupLeaf::~CgroupLeaf() {
  // The child was reaped; the kernel may take a moment to see the cgroup empty (EBUSY). A leaf
  // that cannot go stays behind, empty and harmless, in the host's cgroup (systemd removes it
  // with the service).
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::rmdir(dir_.c_str()) == 0 || errno != EBUSY)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void CgroupLeaf::add(pid_t pid) const {
  write_text(dir_ / "cgroup.procs", std::to_string(pid));
}

std::uint64_t CgroupLeaf::oom_kills() const {
  std::istringstream events(read_text(dir_ / "memory.events").value_or(""));
  std::string key;
  std::uint64_t count = 0;
  while (events >> key >> count) {
    if (key == "oom_kill")
      return count;
  }
  return 0;
}

CgroupLocation CgroupLocation::of_this_process() {
  return {cgroup2_mount().value_or("/sys/fs/cgroup"), read_text("/proc/self/cgroup").value_or(""),
          ::getpid()};
}

WorkerCgroups::WorkerCgroups(CgroupLocation where, Decided on_decided)
    : where_(std::move(where)), on_decided_(std::move(on_decided)) {}

bool WorkerCgroups::usable() {
  std::call_once(prepared_, [this] {
    if (std::optional<fs::path> dir = prepared_cgroup(where_, why_not_)) {
      dir_ = std::move(*dir);
      usable_ = true;
    }
    if (on_decided_)
      on_decided_(*this);
  });
  return usable_;
}

std::unique_ptr<CgroupLeaf> WorkerCgroups::leaf(const std::string& worker,
                                                std::uint64_t memory_max) {
  if (!usable())
    return nullptr;
  const fs::path dir =
      dir_ / ("worker-" + directory_safe(worker) + "-" + std::to_string(next_leaf_++));
  // One left by an earlier host in this cgroup (it was killed) is empty: made anew.
  if (::mkdir(dir.c_str(), 0755) != 0 &&
      (errno != EEXIST || ::rmdir(dir.c_str()) != 0 || ::mkdir(dir.c_str(), 0755) != 0))
    throw std::system_error(errno, std::generic_category(),
                            "cannot make the cgroup " + dir.string());
  auto made = std::make_unique<CgroupLeaf>(dir);
  write_text(dir / "memory.max", std::to_string(memory_max));
  if (fs::exists(dir / "memory.swap.max"))
    write_text(dir / "memory.swap.max", "0");
  return made;
}

}  // namespace warren::isolation
