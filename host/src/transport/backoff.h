// Delays between attempts: the one backoff of Warren, used by broker reconnects, handler retries
// (the broker-delayed ones), the outbox's row retries and its store retries.
//
// The step grows exponentially (initial, 2 x initial, 4 x initial, ... up to max), stays fixed
// (initial every time) or is none (0). Jitter then stretches the step by a random fraction of
// itself, up to `jitter`, and never shortens it: a delay is at least what the policy asks
// (README: "jitter only stretches them"), and hosts that failed together do not all try again
// at the same instant. `max` caps the step, so a jittered delay can pass it by up to `jitter`.
#pragma once

#include <chrono>
#include <cstdint>

namespace warren::transport {

struct BackoffPolicy {
  enum class Growth { none, fixed, exponential };
  Growth growth = Growth::exponential;
  std::chrono::milliseconds initial{0};
  std::chrono::milliseconds max{0};
  double jitter = 0;  // 0..1: the step is stretched by up to this fraction of itself

  // The wait after the `failures`-th failure in a row (1 for the first; 0 counts as 1).
  // `random01` in [0, 1) draws the jitter.
  std::chrono::milliseconds delay_after(std::uint32_t failures, double random01) const;
};

// Reconnecting to the broker or to a store: exponential from `initial` (at least 1 ms) to `max`
// (at least `initial`), stretched by up to half (kReconnectJitter), so a fleet that lost its
// broker at once spreads its reconnects over half a step.
inline constexpr double kReconnectJitter = 0.5;
BackoffPolicy reconnect_policy(std::chrono::milliseconds initial, std::chrono::milliseconds max);

// A policy with a failure count: next() after each failure, reset() after a success.
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy) : policy_(policy) {}

  // The wait before the next attempt; counts one more failure. `random01` in [0, 1).
  std::chrono::milliseconds next(double random01);
  void reset() noexcept { failures_ = 0; }

  std::uint32_t failures() const noexcept { return failures_; }
  const BackoffPolicy& policy() const noexcept { return policy_; }

 private:
  BackoffPolicy policy_;
  std::uint32_t failures_ = 0;
};

}  // namespace warren::transport
