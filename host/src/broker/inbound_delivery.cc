// See inbound_delivery.h.
#include "broker/inbound_delivery.h"

#include <amqp_framing.h>

#include <charconv>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/delay_levels.h"
#include "broker/wire_properties.h"

namespace warren::broker {

std::uint32_t attempt_of(const transport::TextHeaders& headers) {
  const auto value = transport::find_header(headers, "x-warren-attempt");
  if (!value)
    return 1;
  std::uint32_t attempt = 0;
  const auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), attempt);
  return error == std::errc() && end == value->data() + value->size() && attempt > 0 ? attempt : 1;
}

void show_original_route(transport::InboundMessage& inbound) {
  if (inbound.exchange != kDelayDeliveryExchange && !inbound.exchange.empty())
    return;
  if (auto original = transport::find_header(inbound.headers, "x-warren-original-exchange")) {
    inbound.exchange = *original;
  }
  if (auto original = transport::find_header(inbound.headers, "x-warren-original-routing-key")) {
    inbound.routing_key = *original;
  }
}

void take_properties(transport::InboundMessage& message,
                     const amqp_basic_properties_t& properties) {
  if (properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
    message.message_id = string_of(properties.message_id);
  }
  if (properties._flags & AMQP_BASIC_CONTENT_TYPE_FLAG) {
    message.content_type = string_of(properties.content_type);
  }
  if (properties._flags & AMQP_BASIC_HEADERS_FLAG) {
    message.headers = render_headers(properties.headers);
  }
  message.wire_properties = encode_wire_properties(properties);
}

}  // namespace warren::broker
