// The messages every transport moves: what a delivery carries in, what a publish sends out, and
// the helpers over their text headers. Standard library only (the transport seam is a leaf).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warren::transport {

// Headers rendered as text, as plugins see them. Order is the broker's.
using TextHeaders = std::vector<std::pair<std::string, std::string>>;

std::optional<std::string_view> find_header(const TextHeaders& headers, std::string_view name);

// Replaces the value of header `name`, or appends it.
void set_header(TextHeaders& headers, std::string_view name, std::string value);
// Appends header `name` unless the headers already hold it.
void set_header_if_absent(TextHeaders& headers, std::string_view name, std::string value);

struct InboundMessage {
  std::string queue;
  std::string exchange;
  std::string routing_key;
  std::string message_id;
  std::string content_type;
  std::string body;
  TextHeaders headers;
  std::uint32_t attempt = 1;  // from x-warren-attempt; 1 when absent
  bool redelivered = false;
};

struct OutboundMessage {
  std::string exchange;
  std::string routing_key;
  std::string body;
  std::string content_type;  // empty: application/octet-stream
  std::string message_id;    // empty: generated
  TextHeaders headers;
  bool persistent = true;
  bool mandatory = true;
};

// A copy of `original` to publish again (a retry, a dead letter, a replay): its body, content
// type, message id and headers, minus the headers `drop_header` names. Where it goes (exchange,
// routing key) and what headers it gains are the caller's.
OutboundMessage republished_copy(const InboundMessage& original,
                                 bool (*drop_header)(std::string_view name));

}  // namespace warren::transport
