// Stop requests: from SIGINT/SIGTERM (first signal: graceful stop; second: exit at once, the
// broker requeues whatever was unacked) or from code (tests). Reload requests: from SIGHUP
// (Host::reload), several before the host gets to them counting as one.
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

  void request_reload() noexcept;
  enum class Event { stop, reload };
  // Waits for a stop or a reload request; a stop wins. A reload request is taken (consumed).
  Event wait_for_stop_or_reload();

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool requested_ = false;
  bool reload_requested_ = false;
};

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (call it first in main, so every
// thread inherits the mask) and watches them on a dedicated thread (SIGHUP: a reload request).
// SIGUSR2 is blocked too: the destructor sends it to wake the watcher; one from outside is ignored.
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
