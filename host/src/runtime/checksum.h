// The two checksums of the crash accounting files: CRC-32 (IEEE, as zlib computes it) guards the
// crash journal's slots and header and the crash ledger against torn or corrupt content; FNV-1a
// (64 bits) names a message without an id by its routing key and body. Neither is cryptographic:
// they catch accidents, not forgery (the files are the host's own, mode 0600).
#pragma once

#include <cstdint>
#include <string_view>

namespace warren::runtime {

std::uint32_t crc32(std::string_view bytes) noexcept;

// FNV-1a, 64 bits, continuing from `seed` (the offset basis by default).
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ULL) noexcept;

}  // namespace warren::runtime
