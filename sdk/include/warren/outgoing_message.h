// warren::OutgoingMessage: a message a handler publishes (Context::publish). The host publishes
// it, and the test harness records it, as this same type.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace warren {

// Empty content_type means application/octet-stream; empty message_id means the host generates
// one. Messages are persistent.
struct OutgoingMessage {
  std::string exchange;
  std::string routing_key;
  std::string body;
  std::string content_type;
  std::string message_id;
  std::vector<std::pair<std::string, std::string>> headers;
  // true: a message no queue is bound for fails the publish (PublishError, "unroutable").
  // false (SDK 1.2): fire and forget, for notifications to an exchange that may have no queue
  // bound: such a message is dropped and the publish succeeds once the broker confirms it. A
  // host older than SDK 1.2 always publishes mandatory.
  bool mandatory = true;

  friend bool operator==(const OutgoingMessage&, const OutgoingMessage&) = default;
};

}  // namespace warren
