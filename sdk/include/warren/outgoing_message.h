// warren::OutgoingMessage: a message a handler publishes (Context::publish). The host publishes
// it, and the test harness records it, as this same type.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace warren {

// Empty content_type means application/octet-stream; empty message_id means the host generates
// one. Messages are persistent and published as mandatory.
struct OutgoingMessage {
  std::string exchange;
  std::string routing_key;
  std::string body;
  std::string content_type;
  std::string message_id;
  std::vector<std::pair<std::string, std::string>> headers;

  friend bool operator==(const OutgoingMessage&, const OutgoingMessage&) = default;
};

}  // namespace warren
