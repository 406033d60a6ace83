// See message.h.
#include "transport/message.h"

namespace warren::transport {

std::optional<std::string_view> find_header(const TextHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key == name)
      return std::string_view(value);
  }
  return std::nullopt;
}

void set_header(TextHeaders& headers, std::string_view name, std::string value) {
  for (auto& [key, existing] : headers) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  headers.emplace_back(name, std::move(value));
}

void set_header_if_absent(TextHeaders& headers, std::string_view name, std::string value) {
  if (!find_header(headers, name))
    headers.emplace_back(name, std::move(value));
}

OutboundMessage republished_copy(const InboundMessage& original,
                                 bool (*drop_header)(std::string_view name)) {
  OutboundMessage copy;
  copy.body = original.body;
  copy.content_type = original.content_type;
  copy.message_id = original.message_id;
  copy.wire_properties = original.wire_properties;
  for (const auto& header : original.headers) {
    if (!drop_header(header.first))
      copy.headers.push_back(header);
  }
  return copy;
}

}  // namespace warren::transport
