// Liveness and readiness, as /healthz and /readyz report them.
//
// Liveness: every registered loop (broker I/O threads, dispatcher threads, outbox relays) ticks;
// the process is alive while each ticked within its allowance. A hung loop turns it false.
// Readiness: a probe supplied by the host (connected, every worker subscribed, not stopping),
// and, when not ready, why (a line each: "queue 'q' consumed by worker 'w' does not exist...").
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace warren::observability {

class LoopHeartbeat {
 public:
  using Clock = std::chrono::steady_clock;
  LoopHeartbeat(std::string name, Clock::duration allowance);

  void tick() noexcept {
    last_tick_.store(Clock::now().time_since_epoch().count());
    idle_.store(false, std::memory_order_relaxed);
  }
  // A loop that stops for good (clean shutdown) no longer counts against liveness.
  void retire() noexcept { retired_.store(true); }
  // A loop that only runs now and then (a helper between its helps) counts as alive from now
  // until its next tick.
  void idle() noexcept { idle_.store(true); }

  const std::string& name() const noexcept { return name_; }
  bool alive(Clock::time_point now) const noexcept;

 private:
  std::string name_;
  Clock::duration allowance_;
  std::atomic<Clock::rep> last_tick_;
  std::atomic<bool> retired_{false};
  std::atomic<bool> idle_{false};
};

class Health {
 public:
  std::shared_ptr<LoopHeartbeat> register_loop(std::string name,
                                               LoopHeartbeat::Clock::duration allowance);

  struct Liveness {
    bool alive = true;
    std::vector<std::string> stalled;  // names of loops past their allowance
  };
  Liveness liveness() const;

  void set_readiness_probe(std::function<bool()> probe);
  // Asked only when the probe says not ready.
  void set_not_ready_reasons(std::function<std::vector<std::string>()> reasons);
  bool ready() const;

  struct Readiness {
    bool ready = false;
    std::vector<std::string> reasons;  // when not ready; may be empty
  };
  Readiness readiness() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<LoopHeartbeat>> loops_;
  std::function<bool()> readiness_probe_;
  std::function<std::vector<std::string>()> not_ready_reasons_;
};

}  // namespace warren::observability
