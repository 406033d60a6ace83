// AMQP 0-9-1 routing rules, for transports that route in-process (the in-memory transport and,
// later, the table-as-queue transports): direct, fanout, topic (`*` one word, `#` zero or more)
// and headers (x-match all|any) exchanges.
#pragma once

#include <string_view>

#include "config/config.h"
#include "runtime/transport.h"

namespace warren::runtime {

bool topic_matches(std::string_view pattern, std::string_view routing_key);

// Whether a message with this routing key and these headers reaches a queue bound with
// `binding` to an exchange of type `type`.
bool binding_matches(config::ExchangeType type, const config::BindingConfig& binding,
                     std::string_view routing_key, const TextHeaders& headers);

}  // namespace warren::runtime
