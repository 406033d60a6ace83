// Keys that only a RabbitMQ broker understands ([broker] URIs and timeouts, queue types and
// x-arguments, dead-letter exchanges...). Under a table-queue transport they would silently do
// nothing, so the loader refuses each one where it is written, saying why.
#pragma once

#include <initializer_list>
#include <string_view>

#include "config/config.h"
#include "config/table_reader.h"

namespace warren::config {

// True for the transports that keep the queue in a database table (sqlite).
bool is_table_queue(const BrokerConfig& broker) noexcept;

// The transport's name as written in [broker] transport.
std::string_view transport_name(BrokerConfig::Transport transport) noexcept;

// Reports each of `keys` present in `table`: "<key> is a RabbitMQ setting; ...".
void refuse_rabbitmq_only_keys(TableReader& table, std::initializer_list<std::string_view> keys,
                               const BrokerConfig& broker, std::string_view why = {});

}  // namespace warren::config
