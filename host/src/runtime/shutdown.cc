// See shutdown.h. sigwait() on a dedicated thread instead of an async handler: the watcher may
// then log and take locks safely.
#include "runtime/shutdown.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "observability/log.h"

namespace warren::runtime {

void ShutdownSignal::request() noexcept {
  std::lock_guard lock(mutex_);
  requested_ = true;
  cv_.notify_all();
}

bool ShutdownSignal::requested() const noexcept {
  std::lock_guard lock(mutex_);
  return requested_;
}

void ShutdownSignal::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return requested_; });
}

bool ShutdownSignal::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return requested_; });
}

void ShutdownSignal::request_reload() noexcept {
  std::lock_guard lock(mutex_);
  reload_requested_ = true;
  cv_.notify_all();
}

ShutdownSignal::Event ShutdownSignal::wait_for_stop_or_reload() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return requested_ || reload_requested_; });
  if (requested_)
    return Event::stop;
  reload_requested_ = false;
  return Event::reload;
}

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);  // a reload
  // SIGUSR2 wakes the watcher when the host is done (see ~SignalWatcher).
  sigaddset(&set, SIGUSR2);
  return set;
}

}  // namespace

SignalWatcher::SignalWatcher(ShutdownSignal& shutdown) {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, &shutdown, set] {
    int count = 0;
    for (;;) {
      int signal_number = 0;
      if (sigwait(&set, &signal_number) != 0)
        continue;
      if (signal_number == SIGUSR2) {
        // Only our destructor's counts: a stray one (kill -USR2) must not leave SIGINT and
        // SIGTERM blocked with nobody watching them.
        if (stopping_.load())
          return;
        continue;
      }
      if (signal_number == SIGHUP) {
        observability::log_info("received SIGHUP: reloading the configuration");
        shutdown.request_reload();
        continue;
      }
      ++count;
      if (count == 1) {
        observability::log_info(std::string("received ") + strsignal(signal_number) +
                                ": stopping gracefully (send it again to exit at once)");
        shutdown.request();
      } else {
        observability::log_warn(std::string("received ") + strsignal(signal_number) +
                                " again: exiting now; the broker requeues unacked messages");
        observability::flush_logs();
        _exit(1);
      }
    }
  });
}

SignalWatcher::~SignalWatcher() {
  stopping_ = true;
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
}

}  // namespace warren::runtime
