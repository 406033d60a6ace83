// Per-thread generators seeded from std::random_device: no lock on the hot path.
#include "transport/ids.h"

#include <cstdint>
#include <cstdio>
#include <random>

namespace warren::transport {
namespace {

std::mt19937_64& generator() {
  thread_local std::mt19937_64 engine = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }();
  return engine;
}

}  // namespace

std::string random_hex(std::size_t bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes * 2, '0');
  bool all_zero = true;
  // Every byte of each 64-bit draw: a trace id takes two draws, not sixteen.
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (i % 8 == 0)
      word = generator()();
    const auto byte = static_cast<std::uint8_t>(word >> (8 * (i % 8)));
    all_zero = all_zero && byte == 0;
    out[2 * i] = kDigits[byte >> 4];
    out[2 * i + 1] = kDigits[byte & 0xF];
  }
  if (all_zero && bytes > 0)
    out.back() = '1';
  return out;
}

std::string random_uuid() {
  const std::uint64_t high = generator()();
  const std::uint64_t low = generator()();
  const std::uint64_t version_high = (high & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  const std::uint64_t variant_low = (low & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  char buffer[37];
  std::snprintf(buffer, sizeof(buffer), "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(version_high >> 32),
                static_cast<unsigned>((version_high >> 16) & 0xFFFF),
                static_cast<unsigned>(version_high & 0xFFFF),
                static_cast<unsigned>(variant_low >> 48),
                static_cast<unsigned long long>(variant_low & 0xFFFFFFFFFFFFULL));
  return buffer;
}

double random_unit() {
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator());
}

}  // namespace warren::transport
