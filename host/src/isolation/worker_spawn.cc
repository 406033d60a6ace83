#include "isolation/worker_spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

extern char** environ;

namespace warren::isolation {

namespace {

[[noreturn]] void throw_errno(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

// The lowest descriptor number the host may hand over at: one at kChildPluginFd or below could be
// overwritten by the child's other dup2 (or, dup2'd onto itself, keep its close-on-exec).
constexpr int kAboveChildDescriptors = kChildPluginFd + 1;

// A copy of FD at kAboveChildDescriptors or higher, close-on-exec; throws when there is none.
int copy_above_child_descriptors(int fd) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, kAboveChildDescriptors);
  if (copy < 0)
    throw_errno(errno, "fcntl(F_DUPFD_CLOEXEC)");
  return copy;
}

// FD itself when it is above the child's descriptors, else a copy above them (FD closed). Keeps
// close-on-exec.
int moved_above_child_descriptors(int fd) {
  if (fd >= kAboveChildDescriptors)
    return fd;
  try {
    int moved = copy_above_child_descriptors(fd);
    ::close(fd);
    return moved;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

// The plugin's descriptor as posix_spawn is given it: the holder's own, or a copy above the
// child's descriptors for the time of the spawn (the holder's stays as it is).
class PluginDescriptor {
 public:
  explicit PluginDescriptor(int fd)
      : copy_(fd >= 0 && fd < kAboveChildDescriptors ? copy_above_child_descriptors(fd) : -1),
        fd_(copy_ >= 0 ? copy_ : fd) {}
  PluginDescriptor(const PluginDescriptor&) = delete;
  PluginDescriptor& operator=(const PluginDescriptor&) = delete;
  ~PluginDescriptor() {
    if (copy_ >= 0)
      ::close(copy_);
  }
  int fd() const noexcept { return fd_; }

 private:
  int copy_;
  int fd_;
};

int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// posix_spawn's attributes and file actions, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attributes);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

HeldExecutable::HeldExecutable(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw_errno(errno, "cannot open " + path);
  fd_ = moved_above_child_descriptors(fd_);
}

HeldExecutable::HeldExecutable(HeldExecutable&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

HeldExecutable::~HeldExecutable() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string HeldExecutable::exec_path() const {
  return "/proc/self/fd/" + std::to_string(fd_);
}

SpawnedWorker::SpawnedWorker(SpawnedWorker&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      socket_(std::move(other.socket_)),
      reaped_(other.reaped_) {}

SpawnedWorker::~SpawnedWorker() {
  if (pid_ > 0 && !reaped_) {
    kill_group();
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED) != 0 && errno == EINTR) {
    }
  }
  if (pidfd_ >= 0)
    ::close(pidfd_);
}

void SpawnedWorker::kill_group() noexcept {
  if (pid_ > 0 && !reaped_)
    ::kill(-pid_, SIGKILL);
}

std::optional<ChildExit> SpawnedWorker::try_reap() {
  if (reaped_ || pid_ <= 0)
    return std::nullopt;
  siginfo_t info{};
  while (true) {
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG) == 0)
      break;
    if (errno != EINTR)
      throw_errno(errno, "waitid for worker " + std::to_string(pid_));
  }
  if (info.si_pid == 0)
    return std::nullopt;  // still running
  reaped_ = true;
  return child_exit_from(info);
}

std::optional<ChildExit> SpawnedWorker::reap_within(std::chrono::milliseconds timeout) {
  if (auto exit = try_reap())
    return exit;
  if (reaped_)
    return std::nullopt;
  pollfd ended{pidfd_, POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&ended, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  return try_reap();
}

SpawnedWorker spawn_worker(const HeldExecutable& executable, const std::vector<std::string>& args,
                           int plugin_fd) {
  auto [host_end, child_end] = FrameSocket::pair();
  SpawnSetup setup;
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&setup.attributes, &signals);
  sigfillset(&signals);
  posix_spawnattr_setsigdefault(&setup.attributes, &signals);
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setflags(&setup.attributes,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  // dup2 leaves the copy without close-on-exec; every other descriptor of the host has it.
  FrameSocket child_socket(moved_above_child_descriptors(child_end.release()));
  posix_spawn_file_actions_adddup2(&setup.actions, child_socket.fd(), kChildSocketFd);
  PluginDescriptor plugin(plugin_fd);
  if (plugin.fd() >= 0)
    posix_spawn_file_actions_adddup2(&setup.actions, plugin.fd(), kChildPluginFd);

  std::vector<std::string> argv_strings{"warren-worker"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& argument : argv_strings)
    argv.push_back(argument.data());
  argv.push_back(nullptr);

  std::string path = executable.exec_path();
  pid_t pid = -1;
  int error =
      ::posix_spawn(&pid, path.c_str(), &setup.actions, &setup.attributes, argv.data(), environ);
  if (error != 0)
    throw_errno(error, "cannot start worker process " + executable.path());
  int pidfd = open_pidfd(pid);
  if (pidfd < 0) {
    int open_error = errno;
    ::kill(pid, SIGKILL);
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED);
    throw_errno(open_error, "pidfd_open for worker process " + std::to_string(pid));
  }
  return SpawnedWorker(pid, pidfd, std::move(host_end));
}

}  // namespace warren::isolation
