// The timing plugin's count across processes (setting shared_tally = true): with
// isolation = "process" every warren-worker child has its own plugin instance and sees only its
// share of the messages, so the instances count in one file that each maps (MAP_SHARED) and the
// one that handles the `expect`-th message of all writes the report. It reports the whole
// worker: the first message any child saw, the last, the host's CPU between the two (the host is
// every child's parent) and the CPU of every child that handled a message (each notes its own at
// its first message; the reporter reads every child's at the end, through /proc, before any has
// exited). The run removes the file before each run.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "process_clock.h"

namespace bench {

class SharedTally {
 public:
  explicit SharedTally(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    // Every instance sizes the file the same: the first one's ftruncate zero-fills it, the
    // others' change nothing.
    if (fd < 0 || ::ftruncate(fd, sizeof(Shared)) != 0)
      throw std::runtime_error("shared_tally: cannot create " + path);
    void* mapped = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (mapped == MAP_FAILED)
      throw std::runtime_error("shared_tally: cannot map " + path);
    shared_ = static_cast<Shared*>(mapped);
  }
  SharedTally(const SharedTally&) = delete;
  SharedTally& operator=(const SharedTally&) = delete;
  ~SharedTally() { ::munmap(shared_, sizeof(Shared)); }

  // At this instance's first message: notes the child and its CPU, and, if no child has seen a
  // message yet, the time and the host's CPU.
  void first_message() {
    const std::int64_t now = now_ns();
    std::int64_t unset = 0;
    if (shared_->first_ns.compare_exchange_strong(unset, now))
      shared_->host_first_cpu_ns.store(process_cpu_ns(::getppid()));
    const int slot = shared_->children.fetch_add(1);
    if (slot < kMaxChildren) {
      shared_->child[slot].first_cpu_ns.store(process_cpu_ns(::getpid()));
      shared_->child[slot].pid.store(::getpid(), std::memory_order_release);
    }
  }

  // Counts one message; true for the `expect`-th of all.
  bool count_reaches(long expect) { return shared_->handled.fetch_add(1) + 1 == expect; }

  struct Totals {
    std::int64_t first_ns, host_cpu_ns, children_cpu_ns;
    int children;  // that handled a message
  };
  Totals totals() const {
    Totals totals{shared_->first_ns.load(),
                  process_cpu_ns(::getppid()) - shared_->host_first_cpu_ns.load(), 0, 0};
    const int children = std::min(shared_->children.load(), kMaxChildren);
    for (int slot = 0; slot < children; ++slot) {
      const pid_t pid = shared_->child[slot].pid.load(std::memory_order_acquire);
      if (pid > 0) {
        totals.children_cpu_ns += process_cpu_ns(pid) - shared_->child[slot].first_cpu_ns.load();
        ++totals.children;
      }
    }
    return totals;
  }

 private:
  static constexpr int kMaxChildren = 256;
  struct Child {
    std::atomic<pid_t> pid;
    std::atomic<std::int64_t> first_cpu_ns;
  };
  struct Shared {
    std::atomic<long> handled;
    std::atomic<std::int64_t> first_ns;
    std::atomic<std::int64_t> host_first_cpu_ns;
    std::atomic<int> children;
    Child child[kMaxChildren];
  };
  static_assert(std::atomic<std::int64_t>::is_always_lock_free &&
                    std::atomic<long>::is_always_lock_free,
                "the tally's atomics live in memory shared by processes: they must be lock-free");

  Shared* shared_ = nullptr;
};

}  // namespace bench
