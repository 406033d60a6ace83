// Small helpers shared by every transport; see transport.h.
#include "runtime/transport.h"

namespace warren::runtime {

std::optional<std::string_view> find_header(const TextHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key == name)
      return std::string_view(value);
  }
  return std::nullopt;
}

const char* to_string(Settlement::Kind kind) noexcept {
  switch (kind) {
    case Settlement::Kind::ack:
      return "ack";
    case Settlement::Kind::requeue:
      return "requeue";
    case Settlement::Kind::retry_later:
      return "retry";
    case Settlement::Kind::dead_letter:
      return "dead_letter";
  }
  return "unknown";
}

}  // namespace warren::runtime
