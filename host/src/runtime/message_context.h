// The host's side of one message's Context: header lookup, logging tagged with the message,
// publishing (with the message's trace context), the stop signal, the message's scope, and the
// outcome the handler reports. Lives from delivery until settlement; its destructor destroys the
// plugin's scoped objects, so they die exactly when the message is settled.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/retry_decision.h"
#include "runtime/trace_context.h"
#include "runtime/worker_context.h"
#include "transport/transport.h"
#include "warren/host_abi/message_scope.h"
#include "warren/host_abi/services.h"

namespace warren::runtime {

class MessageContext final : public host_abi::MessageServices {
 public:
  MessageContext(const transport::InboundMessage& message, WorkerContext& worker,
                 transport::Publisher* publisher, const std::atomic<bool>& stop_requested);
  MessageContext(const MessageContext&) = delete;
  MessageContext& operator=(const MessageContext&) = delete;

  // Before each handler call (immediate retries call it again with the next attempt).
  void begin_attempt(std::uint32_t attempt) noexcept;
  // What the handler reported during the last call (invalid when it reported nothing usable).
  HandlerResult result() const;
  // "type" of the exception of the last call, for the exceptions metric; empty when none.
  std::uint32_t error_kind() const noexcept { return error_kind_; }

  const TraceContext& trace() const noexcept { return trace_; }
  std::uint32_t attempt() const noexcept { return attempt_; }

  // host_abi::MessageServices
  void log(LogLevel level, std::string_view text) noexcept override;
  std::optional<std::string_view> header(std::string_view name) const noexcept override;
  bool stop_requested() const noexcept override { return stop_requested_.load(); }
  void* scope() const noexcept override { return scope_.get(); }
  void set_scope(void* scope, warren_scope_destroy_fn destroy) noexcept override {
    scope_.set(scope, destroy);
  }
  std::optional<std::string> publish(OutgoingMessage message) noexcept override;
  void report(host_abi::ReportedOutcome outcome) noexcept override;

 private:
  const transport::InboundMessage& message_;
  WorkerContext& worker_;
  transport::Publisher* publisher_;
  const std::atomic<bool>& stop_requested_;
  TraceContext trace_;
  std::uint32_t attempt_ = 1;

  // Destroyed with this context: the plugin's scoped objects die when the message is settled.
  host_abi::MessageScope scope_;

  bool reported_ = false;
  HandlerResult result_;
  std::uint32_t error_kind_ = WARREN_ERROR_NONE;
};

}  // namespace warren::runtime
