// One message run through a retry policy (Harness::deliver_until_settled): after each attempt
// the host's own decision (runtime/retry_decision.h, on the report as the dispatcher reads it:
// runtime/handler_result.h) says ack, dead-letter, run again at once, or retry after a delay;
// a broker-delayed retry comes back with the headers every transport adds
// (transport/failure_headers.h). Internal to the harness.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "warren/host_abi/reported_outcome.h"
#include "warren/testing/harness.h"

namespace warren::testing {

class RetryRun {
 public:
  RetryRun(const RetryPolicy& policy, std::string worker, const TestMessage& first);

  // The message to deliver next.
  const TestMessage& message() const noexcept { return message_; }

  // Records the attempt just delivered and decides what the host would do. True when the
  // message is settled, or when `max_deliveries` attempts ran (at least one always runs).
  bool settle(Result result, const host_abi::ReportedOutcome& outcome, bool stop_requested,
              std::uint32_t max_deliveries);

  // Records a death of the worker process running the message (Result::crash): no attempt, so
  // the same message runs again, unless this was its max_crashes-th death (dead-lettered with
  // the host's reason) or `max_deliveries` runs happened. True when it stops there.
  bool crashed(Result result, int max_crashes, std::uint32_t max_deliveries);

  SettledMessage take() { return std::move(settled_); }

 private:
  config::RetryPolicy policy_;
  std::string worker_;
  TestMessage message_;
  SettledMessage settled_;
  int crashes_ = 0;
};

}  // namespace warren::testing
