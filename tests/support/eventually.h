// Waiting for a condition in a unit test: polls it until it holds or a deadline passes, so a
// test neither sleeps a fixed time nor counts iterations (which a busy machine stretches or
// shrinks at will). The deadline is for liveness only: keep it generous, and assert the exact
// result after the wait.
#pragma once

#include <chrono>
#include <thread>

namespace warren::test_support {

// Calls `condition` every `poll` until it returns true (then true) or `timeout` has passed (then
// the last answer, checked once more at the deadline).
template <typename Condition>
bool eventually(Condition condition, std::chrono::steady_clock::duration timeout,
                std::chrono::steady_clock::duration poll = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition())
      return true;
    std::this_thread::sleep_for(poll);
  }
  return condition();
}

}  // namespace warren::test_support
