// memory_max of worker processes through cgroup v2 (issue 14, "Limits"): when the host runs in a
// cgroup delegated to it (systemd's Delegate=yes), each child gets a leaf cgroup of its own,
// worker-<worker>-<n>, whose memory.max is the worker's memory_max (and memory.swap.max 0), so
// everything the child and whatever it starts use counts, the page cache and shared memory too.
// The kernel's OOM killer then ends the child with SIGKILL, which memory.events' oom_kill tells
// apart from an operator's kill -9: the host names that death "oom". Without a usable delegated
// cgroup (not cgroup v2, the memory controller not offered, not writable), memory_max is the
// child's RLIMIT_DATA instead (worker/resource_limits.h); the host says once which is in force.
// The host's cgroup is looked at when the first child with a memory_max starts, not before.
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
#include <functional>
#include <memory>
#include <mutex>
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

// Where to look for the host's cgroup: ROOT, where the cgroup v2 hierarchy is mounted;
// CGROUP_FILE, the text of /proc/self/cgroup (its "0::/path" line); SELF, the host's pid.
struct CgroupLocation {
  std::filesystem::path root;
  std::string cgroup_file;
  pid_t self = 0;
  // The cgroup2 mount from /proc/self/mountinfo (else /sys/fs/cgroup), /proc/self/cgroup, getpid().
  static CgroupLocation of_this_process();
};

class WorkerCgroups {
 public:
  // Called once, when usable() has decided (to log which limit is in force).
  using Decided = std::function<void(const WorkerCgroups&)>;

  // Looks at nothing and changes nothing yet: a host made only to check a config (`warren
  // check`, `warren reload`) starts no child, and must not move itself.
  explicit WorkerCgroups(CgroupLocation where, Decided on_decided = {});
  WorkerCgroups(const WorkerCgroups&) = delete;
  WorkerCgroups& operator=(const WorkerCgroups&) = delete;

  // The first call (thread-safe) finds the host's cgroup and makes it ready for leaves (see
  // above); then whether it is. Nothing is changed when it is not usable.
  bool usable();
  // After usable(): the host's delegated cgroup, where the leaves are made; or why it is not
  // usable.
  const std::filesystem::path& dir() const noexcept { return dir_; }
  const std::string& why_not() const noexcept { return why_not_; }

  // A new leaf worker-WORKER-N (WORKER's characters other than letters, digits, '_', '-' and
  // '.' made '_') with memory.max MEMORY_MAX (bytes) and no swap; null when not usable().
  // Throws std::system_error naming the file.
  std::unique_ptr<CgroupLeaf> leaf(const std::string& worker, std::uint64_t memory_max);

 private:
  const CgroupLocation where_;
  const Decided on_decided_;
  std::once_flag prepared_;
  bool usable_ = false;
  std::filesystem::path dir_;
  std::string why_not_;
  std::atomic<std::uint64_t> next_leaf_{1};
};

}  // namespace warren::isolation
