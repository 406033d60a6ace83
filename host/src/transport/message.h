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
  // What a broker delivered beyond the fields above, for a copy published again (a retry, a
  // dead letter, a replay) to carry unchanged. Opaque to all but the transport that wrote it:
  // RabbitMQ keeps the message's basic properties there as AMQP encodes them (correlation id,
  // reply-to, type, app id, priority, expiration, content encoding, timestamp, and the headers
  // with their types: integers, booleans, nested tables) and reads them back when it publishes
  // a copy (broker/wire_properties.h); the in-memory transport passes it along, the table
  // queues leave it empty. One opaque string rather than a field per property or a typed
  // header value: the seam stays small and std-only, and nothing else (the runtime, plugins,
  // the table queues) needs more than the text headers.
  std::string wire_properties;
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
  // A republished copy's: its original's InboundMessage::wire_properties. The fields above win
  // over what it holds (message id, content type, delivery mode); a header keeps the original's
  // typed value while its text is unchanged.
  std::string wire_properties;
};

// A copy of `original` to publish again (a retry, a dead letter, a replay): its body, content
// type, message id, wire properties and headers, minus the headers `drop_header` names. Where it
// goes (exchange, routing key) and what headers it gains are the caller's.
OutboundMessage republished_copy(const InboundMessage& original,
                                 bool (*drop_header)(std::string_view name));

}  // namespace warren::transport
