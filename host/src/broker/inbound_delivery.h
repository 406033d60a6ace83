// What a basic.deliver becomes in the runtime's InboundMessage (put together from its frames by
// delivery_assembler.h): properties, headers as text, the attempt from x-warren-attempt, and, for
// a message back from the retry delay levels, the exchange and routing key it was first sent to.
#pragma once

#include <amqp.h>

#include <string>

#include "transport/transport.h"

namespace warren::broker {

// message_id, content_type, headers (as text) and every property as received (wire_properties)
// from a message's properties.
void take_properties(transport::InboundMessage& message, const amqp_basic_properties_t& properties);

// A message back from the retry delay levels, or replayed into its worker's queue alone through
// the default exchange (`warren dlq replay`), shows the handler the exchange and routing key it
// was first sent to (x-warren-original-exchange, -routing-key); any other is left as it came.
void show_original_route(transport::InboundMessage& inbound);

// x-warren-attempt as a positive number; 1 when absent or malformed.
std::uint32_t attempt_of(const transport::TextHeaders& headers);

}  // namespace warren::broker
