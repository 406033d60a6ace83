// One delivered message, read-only, valid only during Handler::handle. Only the SDK's glue
// (plugin.h) creates one.
//
// Lifetimes: body(), routing_key(), exchange(), message_id() and content_type() are views into
// the host's copy of the delivery, valid until handle() returns: copy what you keep. header()
// returns an owned copy, yours to keep.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "warren/abi.h"
#include "warren/detail/strings.h"

namespace warren {

namespace detail {
struct SdkGlue;
}

class Message {
 public:
  std::string_view body() const noexcept { return detail::from_abi(message_->body); }
  std::string_view routing_key() const noexcept { return detail::from_abi(message_->routing_key); }
  std::string_view exchange() const noexcept { return detail::from_abi(message_->exchange); }
  std::string_view message_id() const noexcept { return detail::from_abi(message_->message_id); }
  std::string_view content_type() const noexcept {
    return detail::from_abi(message_->content_type);
  }

  // A header of the message as text (numbers and booleans are rendered; nested tables are not
  // visible here), copied: the string stays valid after handle() returns. std::nullopt when
  // absent.
  std::optional<std::string> header(std::string_view name) const {
    warren_str value{};
    if (host_->message_header(host_message_, detail::to_abi(name), &value) == 0) {
      return std::nullopt;
    }
    return std::string(detail::from_abi(value));
  }

  // 1 for the first delivery; counts every attempt, including in-process immediate retries and
  // broker-delayed retries (the count travels in the x-warren-attempt header).
  std::uint32_t attempt() const noexcept { return message_->attempt; }

  // The broker delivered this message before (to this or another consumer) without an ack.
  bool redelivered() const noexcept { return message_->redelivered != 0; }

 private:
  friend struct detail::SdkGlue;

  Message(const warren_host_api* host, const warren_message* message, void* host_message) noexcept
      : host_(host), message_(message), host_message_(host_message) {}

  const warren_host_api* host_;
  const warren_message* message_;
  void* host_message_;
};

}  // namespace warren
