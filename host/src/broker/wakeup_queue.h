// A queue of commands for an I/O thread, with an eventfd the thread polls beside its socket:
// workers push (acks, publishes) and the I/O thread wakes at once instead of at its next tick.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace warren::broker {

template <class Command>
class WakeupQueue {
 public:
  WakeupQueue() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0)
      throw std::runtime_error("eventfd failed");
  }
  ~WakeupQueue() { ::close(fd_); }
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
      wake();
    return true;
  }

  // The I/O thread is leaving: later pushes are refused. take() still returns what was queued.
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }

  // Everything queued so far, oldest first.
  std::vector<Command> take() {
    std::uint64_t ignored = 0;
    [[maybe_unused]] const auto n = ::read(fd_, &ignored, sizeof(ignored));
    std::vector<Command> taken;
    std::lock_guard lock(mutex_);
    taken.swap(commands_);
    return taken;
  }

  bool empty() const {
    std::lock_guard lock(mutex_);
    return commands_.empty();
  }

  // Makes the poller return (for stop requests that are not commands).
  void wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(fd_, &one, sizeof(one));
  }

  int fd() const noexcept { return fd_; }

 private:
  const int fd_;
  mutable std::mutex mutex_;
  std::vector<Command> commands_;
  bool closed_ = false;
};

}  // namespace warren::broker
