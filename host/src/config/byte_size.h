// Byte sizes as written in warren.toml ("512MiB", "1GiB", "64MB", or a plain number of bytes) and
// back, so that memory limits read the same way in the file and in error messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warren::config {

struct ParsedByteSize {
  enum class Problem { none, malformed, too_large };
  std::uint64_t bytes = 0;  // valid when problem == none
  Problem problem = Problem::none;
};

// Parses <integer><unit>, the unit one of B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB
// (powers of 1024), or none (bytes). No sign, no spaces, no fractions, units as written here.
// too_large when the value does not fit in 64 bits; malformed for anything else it cannot read.
ParsedByteSize parse_byte_size(std::string_view text);

// The shortest form parse_byte_size reads back to the same value, binary units on a tie:
// 536870912 -> "512MiB", 64000000 -> "64MB", 1000 -> "1KB", 1500 -> "1500B".
std::string format_byte_size(std::uint64_t bytes);

// What a byte size looks like, for "must be a byte size ..." messages.
inline constexpr std::string_view kByteSizeSyntaxHint =
    "a byte size: an integer (bytes) or a string of an integer and a unit among B, KB, MB, GB, "
    "TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024) (\"512MiB\", \"1GiB\", \"64MB\")";

}  // namespace warren::config
