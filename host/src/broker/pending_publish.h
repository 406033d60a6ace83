// One publish waiting for the broker's verdict: confirmed, nacked, returned (unroutable with
// mandatory), timed out, or lost with the connection. Shared by the caller, who waits, and the
// publisher's I/O thread, who resolves it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "transport/transport.h"

namespace warren::broker {

class PendingPublish {
 public:
  enum class Result { pending, confirmed, nacked, returned, timeout, unavailable };
  using Clock = std::chrono::steady_clock;

  PendingPublish(transport::OutboundMessage message, Clock::time_point deadline)
      : message_(std::move(message)), deadline_(deadline) {}

  const transport::OutboundMessage& message() const noexcept { return message_; }
  Clock::time_point deadline() const noexcept { return deadline_; }

  // First resolution wins; later ones are ignored.
  void resolve(Result result, std::string detail = {});
  bool resolved() const;

  // Blocks until resolved; throws runtime::PublishError unless confirmed.
  void wait();
  Result result() const;

 private:
  transport::OutboundMessage message_;
  Clock::time_point deadline_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Result result_ = Result::pending;
  std::string detail_;
};

// The metric label of a result (warren_published_total{result}).
const char* result_label(PendingPublish::Result result) noexcept;

}  // namespace warren::broker
