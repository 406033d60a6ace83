// The per-message context handed to Handler::handle: logging tagged with the message id, the
// worker's settings, the stop signal, the message's scope, and publishing with confirms. Valid
// only during Handler::handle; only the SDK's glue (plugin.h) creates one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "warren/abi.h"
#include "warren/detail/strings.h"
#include "warren/errors.h"
#include "warren/log_level.h"
#include "warren/outgoing_message.h"
#include "warren/plugin_context.h"
#include "warren/scope.h"

namespace warren {

namespace detail {
struct SdkGlue;
}

class Context {
 public:
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // debug and trace (SDK 1.2): as PluginContext's, written only when the [log] level lets
  // them through, and dropped before reaching a host older than SDK 1.2.
  void log_trace(std::string_view text) const noexcept { log(LogLevel::trace, text); }
  void log_debug(std::string_view text) const noexcept { log(LogLevel::debug, text); }
  void log_info(std::string_view text) const noexcept { log(LogLevel::info, text); }
  void log_warn(std::string_view text) const noexcept { log(LogLevel::warn, text); }
  void log_error(std::string_view text) const noexcept { log(LogLevel::error, text); }
  // See PluginContext::log_enabled.
  bool log_enabled(LogLevel level) const noexcept { return plugin_.log_enabled(level); }

  std::optional<std::string> setting(std::string_view key) const { return plugin_.setting(key); }

  // True once the host is shutting down: a long handler should finish or give up (returning
  // Outcome::retry() hands the message back without losing it).
  bool stop_requested() const noexcept { return host_->message_stop_requested(host_message_) != 0; }

  // Objects living exactly as long as this message (see scope.h).
  Scope& scope() {
    if (void* existing = host_->message_scope(host_message_)) {
      return *static_cast<Scope*>(existing);
    }
    auto* created = new Scope();
    host_->message_set_scope(host_message_, created, &destroy_scope);
    return *created;
  }

  // Publishes and waits for the broker's confirm. Throws PublishError when the broker nacks or
  // returns the message (no queue bound, unless OutgoingMessage::mandatory is false) or the
  // publish deadline passes. The trace context of the incoming message is propagated.
  void publish(std::string_view exchange, std::string_view routing_key, std::string_view body) {
    OutgoingMessage message;
    message.exchange = exchange;
    message.routing_key = routing_key;
    message.body = body;
    publish(message);
  }

  void publish(const OutgoingMessage& message) {
    std::vector<warren_str> names;
    std::vector<warren_str> values;
    names.reserve(message.headers.size());
    values.reserve(message.headers.size());
    for (const auto& [name, value] : message.headers) {
      names.push_back(detail::to_abi(name));
      values.push_back(detail::to_abi(value));
    }
    warren_publish_request request{};
    request.struct_size = sizeof(request);
    request.exchange = detail::to_abi(message.exchange);
    request.routing_key = detail::to_abi(message.routing_key);
    request.body = detail::to_abi(message.body);
    request.content_type = detail::to_abi(message.content_type);
    request.message_id = detail::to_abi(message.message_id);
    request.header_names = names.data();
    request.header_values = values.data();
    request.header_count = names.size();
    // Read by hosts of SDK 1.2 and later; an older host reads a struct_size past its own
    // request as the fields it knows and publishes mandatory.
    request.flags =
        message.mandatory ? 0u : static_cast<std::uint32_t>(WARREN_PUBLISH_NOT_MANDATORY);
    char error[512] = {0};
    if (host_->message_publish(host_message_, &request, error, sizeof(error)) != 0) {
      throw PublishError(error);
    }
  }

 private:
  friend struct detail::SdkGlue;

  Context(const warren_host_api* host, void* host_message, const PluginContext& plugin) noexcept
      : host_(host), host_message_(host_message), plugin_(plugin) {}

  static void destroy_scope(void* scope) { delete static_cast<Scope*>(scope); }

  void log(LogLevel level, std::string_view text) const noexcept {
    if (const std::uint32_t abi = plugin_.abi_level(level))
      host_->message_log(host_message_, abi, detail::to_abi(text));
  }

  const warren_host_api* host_;
  void* host_message_;
  const PluginContext& plugin_;
};

}  // namespace warren
