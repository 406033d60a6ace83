// One row of warren_outbox as the relay claims it, and the message it becomes.
#pragma once

#include <string>

#include "transport/transport.h"

namespace warren::outbox {

struct OutboxRow {
  std::string id;  // the row's uuid, as text
  std::string exchange;
  std::string routing_key;
  std::string message_id;
  std::string content_type;
  std::string headers_json;  // a JSON object (the table's CHECK guarantees it)
  std::string payload;
  int attempts = 0;  // failed publish attempts so far
};

// The message the relay publishes for `row`: persistent, mandatory, with the row's message_id
// (its id when message_id is empty, so that every attempt carries the same one), content type
// and headers (string values as they are, other JSON values as JSON text). An empty exchange
// means `default_exchange` (the [[outbox]] exchange). Throws std::invalid_argument when the
// headers are not a JSON object.
transport::OutboundMessage to_outbound_message(const OutboxRow& row,
                                               const std::string& default_exchange);

}  // namespace warren::outbox
