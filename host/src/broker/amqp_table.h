// AMQP field tables in and out of rabbitmq-c: an owning builder for the tables Warren sends
// (queue arguments, binding arguments, message headers) and a reader that renders received
// headers as text for plugins.
#pragma once

#include <amqp.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "transport/transport.h"

namespace warren::broker {

// Owns the storage an amqp_table_t points into; the table is valid while the builder lives and
// is not modified.
class AmqpTableBuilder {
 public:
  AmqpTableBuilder() = default;
  AmqpTableBuilder(const AmqpTableBuilder&) = delete;
  AmqpTableBuilder& operator=(const AmqpTableBuilder&) = delete;

  AmqpTableBuilder& add(std::string_view key, std::string_view value);
  AmqpTableBuilder& add(std::string_view key, std::int64_t value);
  AmqpTableBuilder& add(std::string_view key, bool value);
  AmqpTableBuilder& add(std::string_view key, double value);
  AmqpTableBuilder& add(std::string_view key, const config::ArgumentValue& value);
  AmqpTableBuilder& add_all(const config::Arguments& arguments);
  AmqpTableBuilder& add_all(const transport::TextHeaders& headers);
  // `entry` as it is, typed value and all: what it points into is the caller's to keep alive and
  // unchanged while the table is used (a received table, for a copy of the message).
  AmqpTableBuilder& add_entry(const amqp_table_entry_t& entry);

  amqp_table_t table();
  bool empty() const noexcept { return entries_.empty(); }

 private:
  amqp_bytes_t keep(std::string_view text);

  std::deque<std::string> strings_;  // deque: stable addresses as it grows
  std::vector<amqp_table_entry_t> entries_;
};

inline amqp_bytes_t bytes_of(std::string_view s) {
  return amqp_bytes_t{s.size(), const_cast<char*>(s.data())};
}

inline std::string string_of(amqp_bytes_t b) {
  return b.bytes == nullptr ? std::string() : std::string(static_cast<const char*>(b.bytes), b.len);
}

// A received field value as text ("42", "true", "a,b" for arrays); nullopt for nested tables.
std::optional<std::string> render_field(const amqp_field_value_t& value);

// Received headers as text, in their order; nested tables are skipped.
transport::TextHeaders render_headers(const amqp_table_t& table);

// Headers RabbitMQ writes when it dead-letters (x-death, x-first-death-*, x-last-death-*): they
// describe the broker's doing, not the message, and are left out of copies Warren republishes.
bool is_broker_death_header(std::string_view name);

}  // namespace warren::broker
