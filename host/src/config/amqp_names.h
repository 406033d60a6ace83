// Rules for the names the loader sends to RabbitMQ (queues, exchanges) and for references from
// one entry to an exchange, so that a typo fails at load instead of at the broker.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/table_reader.h"

namespace warren::config {

// "" (the default exchange) and amq.* exist on every broker without being declared.
bool is_predeclared_exchange(std::string_view name);

// The longest name of a queue a worker consumes on RabbitMQ. Every routing and binding key of the
// retry delay levels is 28 delay bits as "0." or "1." (56 bytes) followed by the queue's name
// (broker/delay_levels.h, which checks this against its own layout), and such a key is an AMQP
// short string of at most 255 bytes.
inline constexpr std::size_t kMaxConsumedQueueNameBytes = 255 - 56;

// Reports `key` (a worker's queue) when its name is too long to end a delay-level routing key.
// queue_config is the queue's [[queues]] entry, or null for a queue managed elsewhere; a
// server-named queue is skipped, since the broker picks its real (short) name.
void check_consumable_name(TableReader& reader, std::string_view key, const std::string& name,
                           const QueueConfig* queue_config);

// Reports a name RabbitMQ refuses to declare: longer than 255 bytes, or starting with "amq.".
void check_declarable_name(TableReader& reader, std::string_view key, const std::string& name);

// Reports `key` (which names an exchange) unless the exchange is declared in [[exchanges]] or
// is predeclared. config.exchanges must be loaded already.
void check_exchange_reference(TableReader& reader, std::string_view key, const std::string& name,
                              const Config& config);

}  // namespace warren::config
