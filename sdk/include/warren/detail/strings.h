// Conversions between std strings and the ABI's borrowed warren_str.
#pragma once

#include <string>
#include <string_view>

#include "warren/abi.h"

namespace warren::detail {

inline warren_str to_abi(std::string_view s) noexcept {
  return warren_str{s.data(), s.size()};
}

inline std::string_view from_abi(warren_str s) noexcept {
  return s.data == nullptr ? std::string_view{} : std::string_view(s.data, s.size);
}

}  // namespace warren::detail
