// Waking an I/O thread: a Wakeup is the eventfd the thread polls beside its socket, and a
// WakeupQueue<Command> holds the work other threads hand it (acks, publishes, stop requests),
// signalling the Wakeup so that the thread starts at once instead of at its next tick.
//
// The thread drains the eventfd only when its poll found it readable (io_wait.h), not at every
// take(): most turns are woken by the socket, and a read of a quiet eventfd was a failed system
// call per turn (issue 17: 1.4 per message at classic/20).
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace warren::broker {

class Wakeup {
 public:
  Wakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0)
      throw std::runtime_error("eventfd failed");
  }
  ~Wakeup() { ::close(fd_); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  // Makes the poller return; from any thread.
  void signal() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(fd_, &one, sizeof(one));
  }
  // Clears the signal; the poller calls it when its poll found the fd readable, before it looks
  // at what woke it (a push after the drain signals again).
  void drain() noexcept {
    std::uint64_t ignored = 0;
    [[maybe_unused]] const auto n = ::read(fd_, &ignored, sizeof(ignored));
  }

  int fd() const noexcept { return fd_; }

 private:
  const int fd_;
};

template <class Command>
class WakeupQueue {
 public:
  // `wakeup` outlives the queue.
  explicit WakeupQueue(Wakeup& wakeup) : wakeup_(wakeup) {}
  WakeupQueue(const WakeupQueue&) = delete;
  WakeupQueue& operator=(const WakeupQueue&) = delete;

  // False (and nothing queued) once close() ran: nobody would take it.
  bool push(Command command) {
    bool was_empty = false;
    {
      std::lock_guard lock(mutex_);
      if (closed_)
        return false;
      was_empty = commands_.empty();
      commands_.push_back(std::move(command));
    }
    if (was_empty)
      wakeup_.signal();
    return true;
  }

  // The I/O thread is leaving: later pushes are refused. take() still returns what was queued.
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }

  // Everything queued so far, oldest first. The Wakeup is left to the poller to drain.
  std::vector<Command> take() {
    std::vector<Command> taken;
    std::lock_guard lock(mutex_);
    taken.swap(commands_);
    return taken;
  }

  bool empty() const {
    std::lock_guard lock(mutex_);
    return commands_.empty();
  }

 private:
  Wakeup& wakeup_;
  mutable std::mutex mutex_;
  std::vector<Command> commands_;
  bool closed_ = false;
};

}  // namespace warren::broker
