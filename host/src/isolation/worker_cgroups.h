// memory_max of worker processes through cgroup v2 (issue 14, "Limits"): when the host runs in a
// cgroup delegated to it (systemd's Delegate=yes), each child gets a leaf cgroup of its own,
// worker-<worker>-<n>, whose memory.max is the worker's memory_max (and memory.swap.max 0), so
// everything the child and whatever it starts use counts, the page cache and shared memory too.
// The kernel's OOM killer then ends the child with SIGKILL, which memory.events' oom_kill tells
// apart from an operator's kill -9: the host names that death "oom". Without a usable delegated
// cgroup (not cgroup v2, the memory controller not offered, not writable), memory_max is the
// child's RLIMIT_DATA instead (worker/resource_limits.h); the host says once which is in force.
//
// The "no internal processes" rule of cgroup v2: a cgroup that holds processes cannot give
// controllers to children. So when the memory controller is not yet enabled below the host's
// cgroup, the host first moves itself into a leaf `host/` of it (as systemd's delegated services
// do), then enables memory in cgroup.subtree_control; the children's leaves are siblings of
// `host/`. posix_spawn cannot start a child in another cgroup (clone3's CLONE_INTO_CGROUP), so
// the host writes the child's pid into its leaf right after the spawn: the child loads the plugin
// only once it has read the Start frame, which is sent after that.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace warren::isolation {

// One child's cgroup, removed (rmdir) when destroyed: after its process was reaped.
class CgroupLeaf {
 public:
  explicit CgroupLeaf(std::filesystem::path dir) : dir_(std::move(dir)) {}
  CgroupLeaf(const CgroupLeaf&) = delete;
  CgroupLeaf& operator=(const CgroupLeaf&) = delete;
  ~CgroupLeaf();

  const std::filesystem::path& dir() const noexcept { return dir_; }
  // Moves process PID in (cgroup.procs). Throws std::system_error naming the file.
  void add(pid_t pid) const;
  // How many processes the OOM killer ended in it (memory.events' oom_kill; 0 if unreadable).
  std::uint64_t oom_kills() const;

 private:
  std::filesystem::path dir_;
};

class WorkerCgroups {
 public:
  // The host's delegated cgroup, made ready for children's leaves (see above), or null with the
  // reason in WHY_NOT. ROOT: where the cgroup v2 hierarchy is mounted; CGROUP_FILE: the text of
  // /proc/self/cgroup (its "0::/path" line); SELF: the host's pid. Nothing is changed when the
  // answer is null, except a host that could move itself into `host/` but then not enable the
  // memory controller (another process stays in its cgroup): it stays in `host/`.
  static std::unique_ptr<WorkerCgroups> prepare(const std::filesystem::path& root,
                                                const std::string& cgroup_file, pid_t self,
                                                std::string& why_not);
  // prepare() for this process: the cgroup2 mount from /proc/self/mountinfo (else
  // /sys/fs/cgroup) and /proc/self/cgroup.
  static std::unique_ptr<WorkerCgroups> prepare_for_this_process(std::string& why_not);

  // The host's delegated cgroup: the children's leaves are made in it.
  const std::filesystem::path& dir() const noexcept { return dir_; }
  // A new leaf worker-WORKER-N (WORKER's characters other than letters, digits, '_', '-' and
  // '.' made '_') with memory.max MEMORY_MAX (bytes) and no swap. Throws std::system_error
  // naming the file.
  std::unique_ptr<CgroupLeaf> leaf(const std::string& worker, std::uint64_t memory_max);

 private:
  explicit WorkerCgroups(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
  std::atomic<std::uint64_t> next_leaf_{1};
};

}  // namespace warren::isolation
