// A function run on its own thread every `interval` until the object is destroyed (which stops
// and joins the thread, waking it at once). For reports that must not wait for the next event,
// such as the count of error lines an error flood had suppressed (log.cc).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace warren::observability {

class PeriodicTask {
 public:
  PeriodicTask(std::chrono::milliseconds interval, std::function<void()> task);
  ~PeriodicTask();
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

 private:
  void run(std::stop_token stop);

  const std::chrono::milliseconds interval_;
  const std::function<void()> task_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: started once everything it uses exists
};

}  // namespace warren::observability
