// See retry_decision.h.
#include "runtime/retry_decision.h"

#include <algorithm>
#include <cmath>

namespace warren::runtime {

std::chrono::milliseconds backoff_delay(const config::RetryPolicy& policy,
                                        std::uint32_t retry_number, double random01) {
  using config::RetryPolicy;
  double base_ms = 0;
  switch (policy.backoff) {
    case RetryPolicy::Backoff::none:
      return std::chrono::milliseconds(0);
    case RetryPolicy::Backoff::fixed:
      base_ms = static_cast<double>(policy.initial.count());
      break;
    case RetryPolicy::Backoff::exponential: {
      const double exponent = std::min<double>(retry_number == 0 ? 0 : retry_number - 1, 62);
      base_ms = static_cast<double>(policy.initial.count()) * std::pow(2.0, exponent);
      break;
    }
  }
  base_ms = std::min(base_ms, static_cast<double>(policy.max.count()));
  const double stretched = base_ms * (1.0 + policy.jitter * std::clamp(random01, 0.0, 1.0));
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(stretched)));
}

RetryDecision decide(const config::RetryPolicy& policy, const HandlerResult& result,
                     std::uint32_t attempt, double random01) {
  RetryDecision decision;
  decision.settlement.attempt = attempt;
  switch (result.kind) {
    case HandlerResult::Kind::ack:
      decision.settlement.kind = Settlement::Kind::ack;
      return decision;
    case HandlerResult::Kind::dead_letter:
    case HandlerResult::Kind::failed_permanent:
      decision.settlement.kind = Settlement::Kind::dead_letter;
      decision.settlement.reason = result.reason;
      return decision;
    case HandlerResult::Kind::retry:
    case HandlerResult::Kind::failed:
    case HandlerResult::Kind::invalid:
      break;
  }
  const auto max_attempts = static_cast<std::uint32_t>(std::max(1, policy.max_attempts));
  if (attempt >= max_attempts) {
    decision.settlement.kind = Settlement::Kind::dead_letter;
    decision.settlement.reason =
        "gave up after " + std::to_string(attempt) + " attempt" + (attempt == 1 ? "" : "s") + ": " +
        (result.reason.empty() ? "the handler asked for a retry" : result.reason);
    return decision;
  }
  const auto immediate = static_cast<std::uint32_t>(std::max(0, policy.immediate));
  if (!result.delay && attempt <= immediate) {
    decision.run_again_now = true;
    return decision;
  }
  decision.settlement.kind = Settlement::Kind::retry_later;
  decision.settlement.next_attempt = attempt + 1;
  decision.settlement.reason = result.reason;
  decision.settlement.delay =
      result.delay ? std::max(std::chrono::milliseconds(0), *result.delay)
                   : backoff_delay(policy, attempt - std::min(attempt, immediate), random01);
  return decision;
}

}  // namespace warren::runtime
