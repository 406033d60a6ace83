// Parsing and formatting of the byte sizes of warren.toml (memory_max).
#include "config/byte_size.h"

#include <array>
#include <limits>
#include <utility>

namespace warren::config {
namespace {

struct ByteUnit {
  std::string_view suffix;
  std::uint64_t bytes;
};

constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kK = 1000;

// Largest first within each base, binary first: format_byte_size keeps the first of the
// shortest exact forms, so 1GiB prints as "1GiB" (not "1024MiB") and 64000000 as "64MB" (not
// "62500KiB"); on a tie the binary unit wins, memory being counted in pages.
constexpr std::array<ByteUnit, 9> kUnits{{
    {"TiB", kKi* kKi* kKi* kKi},
    {"GiB", kKi* kKi* kKi},
    {"MiB", kKi* kKi},
    {"KiB", kKi},
    {"TB", kK* kK* kK* kK},
    {"GB", kK* kK* kK},
    {"MB", kK* kK},
    {"KB", kK},
    {"B", 1},
}};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

ParsedByteSize parse_byte_size(std::string_view text) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  ParsedByteSize malformed{0, ParsedByteSize::Problem::malformed};
  std::size_t pos = 0;
  while (pos < text.size() && is_digit(text[pos])) {
    ++pos;
  }
  if (pos == 0) {
    return malformed;  // empty, a sign, a space or a unit without a number
  }
  const std::string_view suffix = text.substr(pos);
  std::uint64_t scale = 0;
  if (suffix.empty()) {
    scale = 1;
  } else {
    for (const ByteUnit& unit : kUnits) {
      if (unit.suffix == suffix) {
        scale = unit.bytes;
      }
    }
  }
  if (scale == 0) {
    return malformed;  // an unknown unit, a fraction, a space before the unit
  }
  // The digits are all checked before any overflow is reported, so "99999999999999999999x" is
  // malformed rather than too large.
  std::uint64_t amount = 0;
  for (const char c : text.substr(0, pos)) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (amount > (kMax - digit) / 10) {
      return {0, ParsedByteSize::Problem::too_large};
    }
    amount = amount * 10 + digit;
  }
  if (amount > kMax / scale) {
    return {0, ParsedByteSize::Problem::too_large};
  }
  return {amount * scale, ParsedByteSize::Problem::none};
}

std::string format_byte_size(std::uint64_t bytes) {
  if (bytes == 0) {
    return "0B";
  }
  std::string shortest;
  for (const ByteUnit& unit : kUnits) {
    if (bytes % unit.bytes == 0) {
      std::string text = std::to_string(bytes / unit.bytes) + std::string(unit.suffix);
      if (shortest.empty() || text.size() < shortest.size()) {
        shortest = std::move(text);
      }
    }
  }
  return shortest;  // never empty: "B" divides everything
}

}  // namespace warren::config
