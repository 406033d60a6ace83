// See periodic_task.h.
#include "observability/periodic_task.h"

#include <utility>

namespace warren::observability {

PeriodicTask::PeriodicTask(std::chrono::milliseconds interval, std::function<void()> task)
    : interval_(interval),
      task_(std::move(task)),
      thread_([this](std::stop_token stop) { run(std::move(stop)); }) {}

PeriodicTask::~PeriodicTask() {
  thread_.request_stop();  // wakes the wait below through its stop_callback
  thread_.join();
}

void PeriodicTask::run(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (true) {
    // Returns at the interval, or at once when the destructor requests the stop.
    wake_.wait_for(lock, stop, interval_, [] { return false; });
    if (stop.stop_requested())
      return;
    lock.unlock();
    task_();
    lock.lock();
  }
}

}  // namespace warren::observability
