// Conversions between std strings and the ABI's borrowed warren_str, and the one way a reason is
// written into a caller's error buffer. Used on both sides of the ABI: by the SDK's glue inside a
// plugin and by the host-side adapter (sdk/host_abi).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "warren/abi.h"

namespace warren::detail {

inline warren_str to_abi(std::string_view s) noexcept {
  return warren_str{s.data(), s.size()};
}

// Null data reads as the empty string, whatever the size says.
inline std::string_view from_abi(warren_str s) noexcept {
  return s.data == nullptr ? std::string_view{} : std::string_view(s.data, s.size);
}

// Copies `text` into `buffer`, truncated to `capacity - 1` bytes and always NUL-terminated;
// does nothing without a buffer.
inline void copy_to_buffer(std::string_view text, char* buffer, std::size_t capacity) noexcept {
  if (buffer == nullptr || capacity == 0)
    return;
  const std::size_t length = std::min(text.size(), capacity - 1);
  if (length > 0)
    std::memcpy(buffer, text.data(), length);
  buffer[length] = '\0';
}

}  // namespace warren::detail
