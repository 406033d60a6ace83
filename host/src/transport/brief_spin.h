// Poll briefly, yielding, before sleeping on a condition variable.
//
// Handing a message from one thread to another costs a futex wake; when the waiting thread sleeps
// on another vCPU, that vCPU has gone idle and waking it is an inter-processor interrupt and a
// trip through the hypervisor, tens of microseconds. At prefetch 1 the SQLite queue engine and
// the dispatcher hand every message back and forth, so on an otherwise idle machine that latency,
// not the work, set the rate (bench/queue, batch 1, synchronous normal: 10k msgs/s, the bare loop
// 23k; with this, 22-25k). A waiter that polls for a few tens of microseconds catches a hand-over
// that is about to come without sleeping. It yields rather than spins with `pause`: when both
// threads share one vCPU (a busy machine), a spinning waiter held the CPU its partner needed
// (batch 32: 90k msgs/s against 110k without spinning), while yield runs the partner at once.
#pragma once

#include <chrono>
#include <thread>

namespace warren::transport {

// How long a hand-over is polled for: about one SQLite commit without fsync.
inline constexpr std::chrono::microseconds kSpinBudget{50};

// Polls `ready()`, yielding between polls, until it is true (returns true) or `budget` has
// passed (returns false).
template <class Ready>
bool spin_until(Ready&& ready, std::chrono::microseconds budget = kSpinBudget) {
  if (ready())
    return true;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    std::this_thread::yield();
    if (ready())
      return true;
    if (i % 8 == 0 && std::chrono::steady_clock::now() >= deadline)
      return false;
  }
}

}  // namespace warren::transport
