// Starting a worker process without fork(): the host has threads by the time it starts
// children, and a forked child of a threaded process may only make async-signal-safe calls.
// posix_spawn runs the worker binary through a descriptor the host opened once at start
// (/proc/self/fd/N), so a package upgrade that replaces the file on disk cannot start a child of
// another version than the host; the child gets its end of the socket pair as descriptor 3, the
// plugin the host holds (plugin/held_plugin_file.h) as descriptor 4,
// default signal dispositions, an empty signal mask and a process group of its own (a hard
// timeout kills the group: whatever the handler started goes too). A pidfd follows it, so the
// host waits for it in its poll loop without a SIGCHLD handler.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "isolation/child_exit.h"
#include "isolation/frame_socket.h"

namespace warren::isolation {

// The descriptor numbers the child finds its socket and its plugin's bytes at.
inline constexpr int kChildSocketFd = 3;
inline constexpr int kChildPluginFd = 4;

// An executable held open (O_PATH is not enough for exec through /proc: O_RDONLY).
class HeldExecutable {
 public:
  // Throws std::system_error naming PATH when it cannot be opened.
  explicit HeldExecutable(const std::string& path);
  HeldExecutable(HeldExecutable&& other) noexcept;
  HeldExecutable(const HeldExecutable&) = delete;
  HeldExecutable& operator=(const HeldExecutable&) = delete;
  HeldExecutable& operator=(HeldExecutable&&) = delete;
  ~HeldExecutable();

  int fd() const noexcept { return fd_; }
  const std::string& path() const noexcept { return path_; }
  // What exec is given: /proc/self/fd/N.
  std::string exec_path() const;

 private:
  std::string path_;
  int fd_ = -1;
};

class SpawnedWorker {
 public:
  SpawnedWorker(pid_t pid, int pidfd, FrameSocket socket) noexcept
      : pid_(pid), pidfd_(pidfd), socket_(std::move(socket)) {}
  SpawnedWorker(SpawnedWorker&& other) noexcept;
  SpawnedWorker(const SpawnedWorker&) = delete;
  SpawnedWorker& operator=(const SpawnedWorker&) = delete;
  SpawnedWorker& operator=(SpawnedWorker&&) = delete;
  // Kills the process group and reaps the child if nobody did: a child never outlives its
  // handle (nor becomes a zombie).
  ~SpawnedWorker();

  pid_t pid() const noexcept { return pid_; }
  // Readable once the child has exited.
  int pidfd() const noexcept { return pidfd_; }
  FrameSocket& socket() noexcept { return socket_; }

  // SIGKILL to the child's process group (the handler's own children too).
  void kill_group() noexcept;
  // The child's end, if it has ended (WNOHANG), reaping it.
  std::optional<ChildExit> try_reap();
  // Waits for the end up to TIMEOUT, reaping it.
  std::optional<ChildExit> reap_within(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  FrameSocket socket_;
  bool reaped_ = false;
};

// Spawns EXECUTABLE with ARGS (argv[1...]; argv[0] is "warren-worker") and the environment of
// this process, handing it PLUGIN_FD (-1: none) as kChildPluginFd. Throws std::system_error when
// the kernel refuses.
SpawnedWorker spawn_worker(const HeldExecutable& executable, const std::vector<std::string>& args,
                           int plugin_fd = -1);

}  // namespace warren::isolation
