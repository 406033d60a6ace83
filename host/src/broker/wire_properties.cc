// See wire_properties.h.
#include "broker/wire_properties.h"

#include <chrono>
#include <cstddef>
#include <vector>

namespace warren::broker {
namespace {

// Properties travel in one content header frame, so they are far smaller than this.
constexpr std::size_t kMaxWireProperties = std::size_t{1} << 20;

// `wire` decoded into `pool`; nullptr when there is nothing, or nothing readable.
amqp_basic_properties_t* decode(const std::string& wire, amqp_pool_t* pool) {
  if (wire.empty())
    return nullptr;
  void* decoded = nullptr;
  if (amqp_decode_properties(AMQP_BASIC_CLASS, pool, bytes_of(wire), &decoded) != AMQP_STATUS_OK)
    return nullptr;
  return static_cast<amqp_basic_properties_t*>(decoded);
}

std::uint64_t now_seconds() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

// The text headers in the order of `original`'s entries, then the new ones (see the header).
void merge_headers(const amqp_table_t* original, const transport::TextHeaders& text,
                   AmqpTableBuilder& out) {
  std::vector<bool> taken(text.size(), false);
  auto take = [&](std::string_view name) -> const std::string* {
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (!taken[i] && text[i].first == name) {
        taken[i] = true;
        return &text[i].second;
      }
    }
    return nullptr;
  };
  for (int i = 0; original != nullptr && i < original->num_entries; ++i) {
    const amqp_table_entry_t& entry = original->entries[i];
    const std::string name = string_of(entry.key);
    const auto rendered = render_field(entry.value);
    const std::string* value = take(name);
    if (value == nullptr) {
      if (!rendered)
        out.add_entry(entry);  // no text form, so never in the text headers: kept as it was
      continue;                // else dropped by whoever made the copy
    }
    if (rendered && *rendered == *value) {
      out.add_entry(entry);
    } else {
      out.add(name, std::string_view(*value));
    }
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!taken[i])
      out.add(text[i].first, std::string_view(text[i].second));
  }
}

}  // namespace

std::string encode_wire_properties(const amqp_basic_properties_t& properties) {
  amqp_basic_properties_t encodable = properties;  // rabbitmq-c takes a non-const pointer
  // Every delivery is encoded: one buffer per thread rather than a fresh one each time.
  thread_local std::vector<char> buffer(4096);
  for (;;) {
    const int length = amqp_encode_properties(AMQP_BASIC_CLASS, &encodable,
                                              amqp_bytes_t{buffer.size(), buffer.data()});
    if (length >= 0)
      return std::string(buffer.data(), static_cast<std::size_t>(length));
    if (buffer.size() >= kMaxWireProperties)
      return {};
    buffer.resize(buffer.size() * 16);  // too small (or not encodable: given up at the cap)
  }
}

PublishProperties::PublishProperties(const transport::OutboundMessage& message) {
  const amqp_basic_properties_t* original = decode(message.wire_properties, pool_.get());
  if (original != nullptr) {
    properties_ = *original;
    properties_._flags &= ~AMQP_BASIC_USER_ID_FLAG;
  } else {
    properties_._flags = AMQP_BASIC_TIMESTAMP_FLAG;
    properties_.timestamp = now_seconds();
  }
  properties_._flags |= AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
  properties_.delivery_mode = message.persistent ? 2 : 1;
  properties_.message_id = bytes_of(message.message_id);
  if (!message.content_type.empty() || original == nullptr) {
    properties_._flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
    properties_.content_type =
        bytes_of(message.content_type.empty() ? std::string_view("application/octet-stream")
                                              : std::string_view(message.content_type));
  }
  merge_headers((original != nullptr && (original->_flags & AMQP_BASIC_HEADERS_FLAG) != 0)
                    ? &original->headers
                    : nullptr,
                message.headers, headers_);
  if (headers_.empty()) {
    properties_._flags &= ~AMQP_BASIC_HEADERS_FLAG;
    properties_.headers = amqp_empty_table;
  } else {
    properties_._flags |= AMQP_BASIC_HEADERS_FLAG;
    properties_.headers = headers_.table();
  }
}

void suspend_expiration(transport::OutboundMessage& copy) {
  ScopedPool pool;
  amqp_basic_properties_t* properties = decode(copy.wire_properties, pool.get());
  if (properties == nullptr || (properties->_flags & AMQP_BASIC_EXPIRATION_FLAG) == 0)
    return;
  transport::set_header(copy.headers, kOriginalExpirationHeader, string_of(properties->expiration));
  properties->_flags &= ~AMQP_BASIC_EXPIRATION_FLAG;
  copy.wire_properties = encode_wire_properties(*properties);
}

void restore_expiration(transport::OutboundMessage& copy, const transport::InboundMessage& letter) {
  const auto expiration = transport::find_header(letter.headers, kOriginalExpirationHeader);
  if (!expiration)
    return;
  ScopedPool pool;
  const amqp_basic_properties_t* decoded = decode(copy.wire_properties, pool.get());
  amqp_basic_properties_t properties = decoded != nullptr ? *decoded : amqp_basic_properties_t{};
  properties._flags |= AMQP_BASIC_EXPIRATION_FLAG;
  properties.expiration = bytes_of(*expiration);
  copy.wire_properties = encode_wire_properties(properties);
}

}  // namespace warren::broker
