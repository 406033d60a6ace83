// Parsing and formatting of the duration strings used throughout warren.toml.
#include "config/duration.h"

#include <array>
#include <cstdint>
#include <limits>

namespace warren::config {
namespace {

struct DurationUnit {
  std::string_view suffix;
  std::int64_t milliseconds;
};

// Largest first: parse_duration requires this order and format_duration relies on it.
constexpr std::array<DurationUnit, 5> kUnits{{
    {"d", 24LL * 60 * 60 * 1000},
    {"h", 60LL * 60 * 1000},
    {"m", 60LL * 1000},
    {"s", 1000},
    {"ms", 1},
}};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t total = 0;
  std::size_t next_allowed_unit = 0;  // index into kUnits: units must strictly decrease
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!is_digit(text[pos])) {
      return std::nullopt;  // a sign, a space, a fraction or a missing number
    }
    std::int64_t amount = 0;
    while (pos < text.size() && is_digit(text[pos])) {
      const int digit = text[pos] - '0';
      if (amount > (kMax - digit) / 10) {
        return std::nullopt;
      }
      amount = amount * 10 + digit;
      ++pos;
    }
    std::size_t unit_end = pos;
    while (unit_end < text.size() && !is_digit(text[unit_end])) {
      ++unit_end;
    }
    const std::string_view suffix = text.substr(pos, unit_end - pos);
    std::size_t unit = next_allowed_unit;
    while (unit < kUnits.size() && kUnits[unit].suffix != suffix) {
      ++unit;
    }
    if (unit == kUnits.size()) {
      return std::nullopt;  // missing, unknown, repeated or out-of-order unit
    }
    const std::int64_t scale = kUnits[unit].milliseconds;
    if (amount > kMax / scale || total > kMax - amount * scale) {
      return std::nullopt;
    }
    total += amount * scale;
    next_allowed_unit = unit + 1;
    pos = unit_end;
  }
  return Duration(total);
}

std::string format_duration(Duration duration) {
  std::int64_t remaining = duration.count();
  if (remaining == 0) {
    return "0s";
  }
  std::string text;
  if (remaining < 0) {
    if (remaining == std::numeric_limits<std::int64_t>::min()) {
      return std::to_string(remaining) + "ms";
    }
    text = "-";
    remaining = -remaining;
  }
  for (const DurationUnit& unit : kUnits) {
    if (remaining >= unit.milliseconds) {
      text += std::to_string(remaining / unit.milliseconds);
      text += unit.suffix;
      remaining %= unit.milliseconds;
    }
  }
  return text;
}

}  // namespace warren::config
