// Stop requests: from SIGINT/SIGTERM (first signal: graceful stop; second: exit at once, the
// broker requeues whatever was unacked) or from code (tests).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace warren::runtime {

class ShutdownSignal {
 public:
  void request() noexcept;
  bool requested() const noexcept;
  void wait();
  // False on timeout.
  bool wait_for(std::chrono::milliseconds timeout);

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool requested_ = false;
};

// Blocks SIGINT and SIGTERM in the calling thread (call it first in main, so every thread
// inherits the mask) and watches them on a dedicated thread. SIGUSR2 is blocked too: the
// destructor sends it to wake the watcher; one from outside is ignored.
class SignalWatcher {
 public:
  explicit SignalWatcher(ShutdownSignal& shutdown);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace warren::runtime
