// When a worker's child process may start again after one died, and when its deaths make a
// crash loop (issue 14). Pure: the caller gives the times and the random numbers.
//
// The delay doubles from `first` (200 ms) up to `max` (30 s) with each death, stretched by up to
// a quarter at random so that the children of several workers (or hosts) killed by one cause do
// not start again in step; a child that stayed up for `healthy_after` (a minute) resets it.
//
// A crash loop is `deaths` (5) deaths within `window` (a minute) that blamed no message: children
// that die before they are ready (a plugin whose init crashes, a missing library) or with nothing
// in flight. A worker in a crash loop stops consuming; deaths that blame a message do not count,
// since crash accounting deals with those (the message is dead-lettered at max_crashes).
#pragma once

#include <chrono>
#include <deque>

namespace warren::runtime {

class RestartPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  using Duration = std::chrono::milliseconds;

  struct Limits {
    Duration first{200};
    Duration max{30'000};
    Duration healthy_after{60'000};
    int loop_deaths = 5;
    Duration loop_window{60'000};
  };

  RestartPolicy() : RestartPolicy(Limits{}) {}
  explicit RestartPolicy(Limits limits) : limits_(limits) {}

  // A child became ready at `at`.
  void started(Clock::time_point at) noexcept;
  // A child died at `at`; `blamed_a_message` when it died running one. Returns how long to wait
  // before the next start; `random_unit` in [0, 1) picks the jitter.
  Duration died(Clock::time_point at, bool blamed_a_message, double random_unit);
  // The deaths that blamed no message reached the crash loop's count within its window.
  bool crash_loop() const noexcept { return crash_loop_; }

 private:
  Limits limits_;
  int deaths_in_a_row_ = 0;
  Clock::time_point last_start_{};
  bool ever_started_ = false;
  std::deque<Clock::time_point> unblamed_deaths_;
  bool crash_loop_ = false;
};

}  // namespace warren::runtime
