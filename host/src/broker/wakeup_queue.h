// Waking an I/O thread: a Wakeup is the eventfd the thread polls beside its socket, and a
// WakeupQueue<Command> holds the work other threads hand it (acks, publishes, stop requests),
// signalling the Wakeup so that the thread starts at once instead of at its next tick.
//
// The thread drains the eventfd only when its poll found it readable (io_wait.h), not at every
// take(): most turns are woken by the socket, and a read of a quiet eventfd was a failed system
// call per turn (issue 17: 1.4 per message at classic/20). And a push signals only a thread that
// may be asleep: one that is awake takes the work at its next turn anyway, and the write would
// only cost a system call and a turn of the thread for nothing. The thread says it may sleep
// (may_sleep()) before it looks whether work is queued (WakeupQueue::empty()), a pusher looks
// whether it may be asleep after it queued, both under the queue's mutex: either the thread sees
// the work and does not sleep, or the pusher sees it may be asleep and signals.
//
// A push may also leave a sleeping thread asleep (`wake` false): for a pusher that knows another
// push follows at once (a dispatcher settling while its inbox still holds deliveries: issue 17,
// one wake-up of the I/O thread per burst of settlements instead of one per settlement). The
// thread takes such work at its next turn: the next signalling push, its socket, or at the
// latest its wake-up interval (io_loop.h), since its poll never waits longer. A signal is owed
// until the thread takes the queue, so the first signalling push after quiet ones still signals.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
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

  // The poller, before it looks for queued work and then polls (see above).
  void may_sleep() noexcept { may_sleep_.store(true); }
  // The poller, after its poll returned.
  void awake() noexcept { may_sleep_.store(false); }
  bool may_be_asleep() const noexcept { return may_sleep_.load(); }

 private:
  const int fd_;
  std::atomic<bool> may_sleep_{true};  // true: a push signals (before the first turn, too)
};

template <class Command>
class WakeupQueue {
 public:
  // `wakeup` outlives the queue.
  explicit WakeupQueue(Wakeup& wakeup) : wakeup_(wakeup) {}
  WakeupQueue(const WakeupQueue&) = delete;
  WakeupQueue& operator=(const WakeupQueue&) = delete;

  // False (and nothing queued) once close() ran: nobody would take it. `wake` false: queued
  // without signalling a sleeping thread (see above).
  bool push(Command command, bool wake = true) {
    bool signal = false;
    {
      std::lock_guard lock(mutex_);
      if (closed_)
        return false;
      // Covered: an earlier push since the last take() signalled, or saw the thread awake (then
      // the thread sees the work before it sleeps). A quiet push to a thread that may be asleep
      // covers nothing: the next signalling push must still signal.
      const bool asleep = wakeup_.may_be_asleep();
      signal = wake && asleep && !covered_;
      covered_ = covered_ || signal || !asleep;
      commands_.push_back(std::move(command));
    }
    if (signal)
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
    covered_ = false;
    return taken;
  }

  // The same into `taken` (emptied first), which gives the queue its buffer in exchange: a taker
  // that keeps `taken` from turn to turn makes the two vectors take turns, and once they have
  // grown to a turn's worth neither allocates again.
  void take_into(std::vector<Command>& taken) {
    taken.clear();
    std::lock_guard lock(mutex_);
    taken.swap(commands_);
    covered_ = false;
  }

  bool empty() const {
    std::lock_guard lock(mutex_);
    return commands_.empty();
  }

 private:
  Wakeup& wakeup_;
  mutable std::mutex mutex_;
  std::vector<Command> commands_;
  bool covered_ = false;  // the thread sees what is queued without another signal (push())
  bool closed_ = false;
};

}  // namespace warren::broker
