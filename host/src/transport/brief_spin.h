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

#include <atomic>
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

// Whether polling before sleeping pays off at one hand-over point. It does when the item usually
// comes within the budget (a partner thread answering at once: the SQLite queue engine and its
// worker at prefetch 1), and not when it usually does not (deliveries read from a socket, two
// workers sharing one inbox): then every poll is burnt CPU, a yield system call each time
// (issue 17: with two workers on RabbitMQ, 1.6 yields per message, and the host's CPU per message
// twice the bare loop's). Keeps a score of recent polls, up one for a hit and down one for a
// miss, between kFloor and kCeiling; polls while the score is above kFloor, and, once it has
// fallen there, still polls every kProbeEvery-th time to notice when polling pays again.
// Thread-safe (relaxed atomics: an approximate score is all it needs).
class SpinAdvisor {
 public:
  static constexpr int kFloor = -4;
  static constexpr int kCeiling = 16;
  static constexpr unsigned kProbeEvery = 32;

  bool should_spin() noexcept {
    if (score_.load(std::memory_order_relaxed) > kFloor)
      return true;
    return calls_.fetch_add(1, std::memory_order_relaxed) % kProbeEvery == 0;
  }

  void record(bool hit) noexcept {
    const int score = score_.load(std::memory_order_relaxed);
    const int next =
        hit ? (score < kCeiling ? score + 1 : score) : (score > kFloor ? score - 1 : score);
    score_.store(next, std::memory_order_relaxed);
  }

 private:
  std::atomic<int> score_{0};
  std::atomic<unsigned> calls_{0};
};

}  // namespace warren::transport
