// See outbox_row.h.
#include "outbox/outbox_row.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace warren::outbox {

transport::OutboundMessage to_outbound_message(const OutboxRow& row,
                                               const std::string& default_exchange) {
  transport::OutboundMessage message;
  message.exchange = row.exchange.empty() ? default_exchange : row.exchange;
  message.routing_key = row.routing_key;
  message.body = row.payload;
  message.content_type = row.content_type;
  // The publisher invents a fresh id for a message without one, at every attempt: an empty
  // message_id (the column allows '') would defeat consumers that deduplicate on it.
  message.message_id = row.message_id.empty() ? row.id : row.message_id;
  message.persistent = true;
  message.mandatory = true;
  if (row.headers_json.empty())
    return message;
  const auto headers = nlohmann::json::parse(row.headers_json, nullptr, /*allow_exceptions=*/false);
  if (!headers.is_object()) {
    throw std::invalid_argument("outbox row " + row.id +
                                ": headers must be a JSON object of name -> value, got " +
                                row.headers_json.substr(0, 80));
  }
  for (const auto& [name, value] : headers.items()) {
    message.headers.emplace_back(name, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return message;
}

}  // namespace warren::outbox
