// Rules for the names the loader sends to RabbitMQ (queues, exchanges) and for references from
// one entry to an exchange, so that a typo fails at load instead of at the broker.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "config/table_reader.h"

namespace warren::config {

// "" (the default exchange) and amq.* exist on every broker without being declared.
bool is_predeclared_exchange(std::string_view name);

// Reports a name RabbitMQ refuses to declare: longer than 255 bytes, or starting with "amq.".
void check_declarable_name(TableReader& reader, std::string_view key, const std::string& name);

// Reports `key` (which names an exchange) unless the exchange is declared in [[exchanges]] or
// is predeclared. config.exchanges must be loaded already.
void check_exchange_reference(TableReader& reader, std::string_view key, const std::string& name,
                              const Config& config);

}  // namespace warren::config
