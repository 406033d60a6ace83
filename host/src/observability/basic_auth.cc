// See basic_auth.h.
#include "observability/basic_auth.h"

#include <cctype>
#include <cstdint>

namespace warren::observability {
namespace {

// 0..63 for a base64 character, -1 otherwise.
int base64_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size())
    return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  while (!text.empty() && text.back() == '=')
    text.remove_suffix(1);
  if (text.size() % 4 == 1)
    return std::nullopt;
  std::string decoded;
  decoded.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int bit_count = 0;
  for (const char c : text) {
    const int value = base64_value(c);
    if (value < 0)
      return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      decoded.push_back(static_cast<char>((bits >> bit_count) & 0xFF));
    }
  }
  return decoded;
}

bool constant_time_equals(std::string_view supplied, std::string_view expected) {
  if (expected.empty())
    return supplied.empty();
  unsigned difference = supplied.size() == expected.size() ? 0U : 1U;
  for (std::size_t i = 0; i < supplied.size(); ++i) {
    difference |= static_cast<unsigned char>(supplied[i]) ^
                  static_cast<unsigned char>(expected[i % expected.size()]);
    // Keeps the compiler from turning the loop into an early exit.
    asm volatile("" : "+r"(difference));
  }
  return difference == 0;
}

bool BasicAuth::accepts(std::string_view authorization) const {
  authorization = trim(authorization);
  constexpr std::string_view kScheme = "basic ";
  if (!starts_with_ignoring_case(authorization, kScheme))
    return false;
  const auto decoded = decode_base64(trim(authorization.substr(kScheme.size())));
  if (!decoded)
    return false;
  const std::size_t colon = decoded->find(':');
  if (colon == std::string::npos)
    return false;
  const std::string_view credentials(*decoded);
  // Both comparisons always run: which one failed must not show in the timing.
  const bool user_matches = constant_time_equals(credentials.substr(0, colon), user_);
  const bool password_matches = constant_time_equals(credentials.substr(colon + 1), password_);
  return user_matches && password_matches;
}

}  // namespace warren::observability
