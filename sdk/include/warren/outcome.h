// What a handler decides about one message: ack it, retry it later, or dead-letter it.
// Exceptions are the other way to fail: anything thrown means "retry under the worker's policy",
// except warren::PermanentError, which is this file's dead_letter(what()) thrown (errors.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace warren {

class Outcome {
 public:
  enum class Kind { ack, retry, dead_letter };

  // The message is done; the broker forgets it.
  static Outcome ack() { return Outcome(Kind::ack, std::nullopt, {}); }
  // Try again later, after the delay of the worker's retry policy.
  static Outcome retry() { return Outcome(Kind::retry, std::nullopt, {}); }
  // Try again after `delay` (overrides the policy's delay; the attempt limit still applies).
  static Outcome retry(std::chrono::milliseconds delay) { return Outcome(Kind::retry, delay, {}); }
  // Never retry: send the message to the worker's dead-letter exchange with this reason.
  static Outcome dead_letter(std::string reason) {
    return Outcome(Kind::dead_letter, std::nullopt, std::move(reason));
  }

  Kind kind() const noexcept { return kind_; }
  std::optional<std::chrono::milliseconds> delay() const noexcept { return delay_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  Outcome(Kind kind, std::optional<std::chrono::milliseconds> delay, std::string reason)
      : kind_(kind), delay_(delay), reason_(std::move(reason)) {}

  Kind kind_;
  std::optional<std::chrono::milliseconds> delay_;
  std::string reason_;
};

}  // namespace warren
