// What happens after a handler ran: the pure decision between "ack", "run again now"
// (immediate retries), "retry later" (broker-delayed, with backoff) and "dead-letter".
//
// Attempts count every handler invocation and travel with the message (x-warren-attempt), so
// the decision depends only on the policy, the attempt number and the handler's result.
// With immediate = i and max_attempts = m: attempts 1..i that fail run again at once; attempt k
// (i < k < m) that fails is retried after backoff(k - i); attempt m that fails is dead-lettered.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"
#include "transport/backoff.h"
#include "transport/transport.h"

namespace warren::runtime {

struct HandlerResult {
  enum class Kind {
    ack,
    retry,             // Outcome::retry() / retry(delay)
    dead_letter,       // Outcome::dead_letter(reason)
    failed,            // threw (anything but PermanentError)
    failed_permanent,  // threw warren::PermanentError
    invalid,           // reported garbage, or nothing
  };
  Kind kind = Kind::invalid;
  std::optional<std::chrono::milliseconds> delay;  // retry(delay)
  std::string reason;  // dead-letter reason, or "type: what" of the exception
};

struct RetryDecision {
  bool run_again_now = false;
  transport::Settlement settlement;
};

// `random01` in [0, 1) draws the jitter.
RetryDecision decide(const config::RetryPolicy& policy, const HandlerResult& result,
                     std::uint32_t attempt, double random01);

// The delay before broker-delayed retry number `retry_number` (1-based), jitter applied
// (jitter only stretches a delay, never shortens it).
std::chrono::milliseconds backoff_delay(const config::RetryPolicy& policy,
                                        std::uint32_t retry_number, double random01);

// A worker's retry policy as the shared backoff (transport/backoff.h).
transport::BackoffPolicy backoff_policy(const config::RetryPolicy& policy);

// The dead-letter reason (x-warren-error) of a message whose worker process died `crashes` times
// running it (isolation = "process", at max_crashes): "crash: SIGSEGV: its worker process died
// 3 times running this message". The SDK's test harness gives the same words.
std::string child_crash_reason(const std::string& death, int crashes);

}  // namespace warren::runtime
