// UTF-8 validation shared by the escapers of log lines and terminal output (json_escape.h,
// terminal_escape.h), which keep valid sequences and treat every other byte as suspect.
#pragma once

#include <cstddef>
#include <string_view>

namespace warren::observability {

// Length of the valid multi-byte UTF-8 sequence starting at s[i] (2 to 4), or 0 when the byte
// there does not start one (ASCII, a stray continuation byte, an overlong or cut sequence).
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
  } else {
    return 0;
  }
  if (i + length > s.size())
    return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
  }
  return length;
}

}  // namespace warren::observability
