// See retry_run.h.
#include "retry_run.h"

#include <algorithm>
#include <ctime>
#include <string>
#include <utility>

#include "host_config.h"
#include "runtime/handler_result.h"
#include "runtime/retry_decision.h"
#include "transport/failure_headers.h"

namespace warren::testing {
namespace {

// x-warren-first-failed-at: RFC 3339 UTC, to the second (the host adds milliseconds).
std::string utc_now_text() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  return std::string(text, std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm));
}

// The message of the next broker-delayed attempt: the x-warren-* retry headers the transports
// add to the copy they publish (x-warren-attempt, x-warren-last-error, ...).
void add_retry_headers(TestMessage& message, const transport::Settlement& settlement) {
  transport::InboundMessage original;
  original.exchange = message.exchange;
  original.routing_key = message.routing_key;
  original.message_id = message.message_id;
  original.content_type = message.content_type;
  original.body = message.body;
  original.headers.assign(message.headers.begin(), message.headers.end());
  original.attempt = message.attempt;
  transport::TextHeaders headers = original.headers;
  transport::add_retry_headers(headers, original, settlement, utc_now_text());
  message.headers.clear();
  for (auto& [name, value] : headers)
    message.headers[std::move(name)] = std::move(value);
  message.attempt = settlement.next_attempt;
  message.redelivered = false;  // a new copy, not a redelivery
}

}  // namespace

RetryRun::RetryRun(const RetryPolicy& policy, std::string worker, const TestMessage& first)
    : policy_(to_host(policy)), worker_(std::move(worker)), message_(first) {
  message_.attempt = std::max<std::uint32_t>(1, message_.attempt);
}

bool RetryRun::settle(Result result, const host_abi::ReportedOutcome& outcome, bool stop_requested,
                      std::uint32_t max_deliveries) {
  const std::uint32_t attempt = message_.attempt;
  crashes_ = 0;  // it ran in the end: the host forgets its crashes
  // Jitter drawn as 0: the shortest delay the host would wait (jitter only stretches it).
  runtime::RetryDecision decision =
      runtime::decide(policy_, runtime::handler_result(outcome), attempt, 0.0);
  if (decision.run_again_now && stop_requested) {
    // As the dispatcher when stopping: no in-process retry; the broker holds it for the next start.
    decision.run_again_now = false;
    decision.settlement.kind = transport::Settlement::Kind::retry_later;
    decision.settlement.next_attempt = attempt + 1;
    decision.settlement.delay = std::chrono::milliseconds(0);
  }
  transport::Settlement& settlement = decision.settlement;
  settlement.worker = worker_;
  settlement.attempt = attempt;

  SettledMessage::Attempt record;
  record.number = attempt;
  record.result = std::move(result);
  // An immediate retry leaves the settlement unset: nothing is settled yet.
  switch (decision.run_again_now ? transport::Settlement::Kind::retry_later : settlement.kind) {
    case transport::Settlement::Kind::ack:
      settled_.attempts.push_back(std::move(record));
      settled_.disposition = SettledMessage::Disposition::acked;
      return true;
    case transport::Settlement::Kind::dead_letter:
      settled_.attempts.push_back(std::move(record));
      settled_.disposition = SettledMessage::Disposition::dead_lettered;
      settled_.reason = settlement.reason;
      return true;
    case transport::Settlement::Kind::requeue:
    case transport::Settlement::Kind::retry_later:
      break;
  }
  record.run_again_now = decision.run_again_now;
  if (!decision.run_again_now)
    record.delay = settlement.delay;
  settled_.attempts.push_back(std::move(record));

  const std::uint32_t next = decision.run_again_now ? attempt + 1 : settlement.next_attempt;
  if (settled_.attempts.size() >= std::max<std::uint32_t>(1, max_deliveries)) {
    settled_.disposition = SettledMessage::Disposition::retrying;
    settled_.next_attempt = next;
    settled_.next_delay = decision.run_again_now ? std::chrono::milliseconds(0) : settlement.delay;
    return true;
  }
  if (decision.run_again_now)
    message_.attempt = next;  // the same message, run again in process
  else
    add_retry_headers(message_, settlement);
  return false;
}

bool RetryRun::crashed(Result result, int max_crashes, std::uint32_t max_deliveries) {
  ++crashes_;
  SettledMessage::Attempt record;
  record.number = message_.attempt;
  const std::string death = result.crash;
  record.result = std::move(result);
  if (crashes_ >= max_crashes) {
    settled_.attempts.push_back(std::move(record));
    settled_.disposition = SettledMessage::Disposition::dead_lettered;
    settled_.reason = runtime::child_crash_reason(death, crashes_);
    return true;
  }
  record.run_again_now = true;  // in a fresh process, the same attempt
  settled_.attempts.push_back(std::move(record));
  if (settled_.attempts.size() >= std::max<std::uint32_t>(1, max_deliveries)) {
    settled_.disposition = SettledMessage::Disposition::retrying;
    settled_.next_attempt = message_.attempt;
    settled_.next_delay = std::chrono::milliseconds(0);
    return true;
  }
  return false;
}

}  // namespace warren::testing
