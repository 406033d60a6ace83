// See retry_decision.h.
#include "runtime/retry_decision.h"

#include <algorithm>

namespace warren::runtime {

std::chrono::milliseconds backoff_delay(const config::RetryPolicy& policy,
                                        std::uint32_t retry_number, double random01) {
  return backoff_policy(policy).delay_after(retry_number, random01);
}

transport::BackoffPolicy backoff_policy(const config::RetryPolicy& policy) {
  using Growth = transport::BackoffPolicy::Growth;
  transport::BackoffPolicy backoff;
  switch (policy.backoff) {
    case config::RetryPolicy::Backoff::none:
      backoff.growth = Growth::none;
      break;
    case config::RetryPolicy::Backoff::fixed:
      backoff.growth = Growth::fixed;
      break;
    case config::RetryPolicy::Backoff::exponential:
      backoff.growth = Growth::exponential;
      break;
  }
  backoff.initial = policy.initial;
  backoff.max = policy.max;
  backoff.jitter = policy.jitter;
  return backoff;
}

RetryDecision decide(const config::RetryPolicy& policy, const HandlerResult& result,
                     std::uint32_t attempt, double random01) {
  RetryDecision decision;
  decision.settlement.attempt = attempt;
  switch (result.kind) {
    case HandlerResult::Kind::ack:
      decision.settlement.kind = transport::Settlement::Kind::ack;
      return decision;
    case HandlerResult::Kind::dead_letter:
    case HandlerResult::Kind::failed_permanent:
      decision.settlement.kind = transport::Settlement::Kind::dead_letter;
      decision.settlement.reason = result.reason;
      return decision;
    case HandlerResult::Kind::retry:
    case HandlerResult::Kind::failed:
    case HandlerResult::Kind::invalid:
      break;
  }
  const auto max_attempts = static_cast<std::uint32_t>(std::max(1, policy.max_attempts));
  if (attempt >= max_attempts) {
    decision.settlement.kind = transport::Settlement::Kind::dead_letter;
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
  decision.settlement.kind = transport::Settlement::Kind::retry_later;
  decision.settlement.next_attempt = attempt + 1;
  decision.settlement.reason = result.reason;
  decision.settlement.delay =
      result.delay ? std::max(std::chrono::milliseconds(0), *result.delay)
                   : backoff_delay(policy, attempt - std::min(attempt, immediate), random01);
  return decision;
}

std::string child_crash_reason(const std::string& death, int crashes) {
  return "crash: " + death + ": its worker process died " + std::to_string(crashes) + " time" +
         (crashes == 1 ? "" : "s") + " running this message";
}

}  // namespace warren::runtime
