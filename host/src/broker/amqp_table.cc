// See amqp_table.h.
#include "broker/amqp_table.h"

#include <cstdio>
#include <type_traits>
#include <variant>

namespace warren::broker {

amqp_bytes_t AmqpTableBuilder::keep(std::string_view text) {
  strings_.emplace_back(text);
  return bytes_of(strings_.back());
}

AmqpTableBuilder& AmqpTableBuilder::add(std::string_view key, std::string_view value) {
  amqp_table_entry_t entry{};
  entry.key = keep(key);
  entry.value.kind = AMQP_FIELD_KIND_UTF8;
  entry.value.value.bytes = keep(value);
  entries_.push_back(entry);
  return *this;
}

AmqpTableBuilder& AmqpTableBuilder::add(std::string_view key, std::int64_t value) {
  amqp_table_entry_t entry{};
  entry.key = keep(key);
  entry.value.kind = AMQP_FIELD_KIND_I64;
  entry.value.value.i64 = value;
  entries_.push_back(entry);
  return *this;
}

AmqpTableBuilder& AmqpTableBuilder::add(std::string_view key, bool value) {
  amqp_table_entry_t entry{};
  entry.key = keep(key);
  entry.value.kind = AMQP_FIELD_KIND_BOOLEAN;
  entry.value.value.boolean = value ? 1 : 0;
  entries_.push_back(entry);
  return *this;
}

AmqpTableBuilder& AmqpTableBuilder::add(std::string_view key, double value) {
  amqp_table_entry_t entry{};
  entry.key = keep(key);
  entry.value.kind = AMQP_FIELD_KIND_F64;
  entry.value.value.f64 = value;
  entries_.push_back(entry);
  return *this;
}

AmqpTableBuilder& AmqpTableBuilder::add(std::string_view key, const config::ArgumentValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          add(key, std::string_view(v));
        } else {
          add(key, v);
        }
      },
      value);
  return *this;
}

AmqpTableBuilder& AmqpTableBuilder::add_all(const config::Arguments& arguments) {
  for (const auto& [key, value] : arguments)
    add(key, value);
  return *this;
}

AmqpTableBuilder& AmqpTableBuilder::add_all(const transport::TextHeaders& headers) {
  for (const auto& [key, value] : headers)
    add(key, std::string_view(value));
  return *this;
}

AmqpTableBuilder& AmqpTableBuilder::add_entry(const amqp_table_entry_t& entry) {
  entries_.push_back(entry);
  return *this;
}

amqp_table_t AmqpTableBuilder::table() {
  amqp_table_t table{};
  table.num_entries = static_cast<int>(entries_.size());
  table.entries = entries_.empty() ? nullptr : entries_.data();
  return table;
}

std::optional<std::string> render_field(const amqp_field_value_t& field) {
  const auto& v = field.value;
  switch (field.kind) {
    case AMQP_FIELD_KIND_BOOLEAN:
      return std::string(v.boolean ? "true" : "false");
    case AMQP_FIELD_KIND_I8:
      return std::to_string(v.i8);
    case AMQP_FIELD_KIND_U8:
      return std::to_string(v.u8);
    case AMQP_FIELD_KIND_I16:
      return std::to_string(v.i16);
    case AMQP_FIELD_KIND_U16:
      return std::to_string(v.u16);
    case AMQP_FIELD_KIND_I32:
      return std::to_string(v.i32);
    case AMQP_FIELD_KIND_U32:
      return std::to_string(v.u32);
    case AMQP_FIELD_KIND_I64:
      return std::to_string(v.i64);
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP:
      return std::to_string(v.u64);
    case AMQP_FIELD_KIND_F32:
      return std::to_string(v.f32);
    case AMQP_FIELD_KIND_F64: {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.17g", v.f64);
      return std::string(buffer);
    }
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES:
      return string_of(v.bytes);
    case AMQP_FIELD_KIND_VOID:
      return std::string();
    case AMQP_FIELD_KIND_ARRAY: {
      std::string joined;
      for (int i = 0; i < v.array.num_entries; ++i) {
        const auto item = render_field(v.array.entries[i]);
        if (!item)
          continue;
        if (!joined.empty())
          joined += ',';
        joined += *item;
      }
      return joined;
    }
    default:
      return std::nullopt;  // tables, decimals
  }
}

transport::TextHeaders render_headers(const amqp_table_t& table) {
  transport::TextHeaders headers;
  headers.reserve(static_cast<std::size_t>(table.num_entries));
  for (int i = 0; i < table.num_entries; ++i) {
    const auto& entry = table.entries[i];
    if (auto value = render_field(entry.value)) {
      headers.emplace_back(string_of(entry.key), std::move(*value));
    }
  }
  return headers;
}

bool is_broker_death_header(std::string_view name) {
  return name == "x-death" || name.starts_with("x-first-death-") ||
         name.starts_with("x-last-death-");
}

}  // namespace warren::broker
