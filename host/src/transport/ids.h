// Random identifiers: message ids (UUID v4) and W3C trace/span ids.
#pragma once

#include <cstddef>
#include <string>

namespace warren::transport {

std::string random_uuid();
// `bytes` random bytes as lowercase hex (never all zero, as W3C trace context requires).
std::string random_hex(std::size_t bytes);
// A uniform double in [0, 1), from a per-thread generator.
double random_unit();

}  // namespace warren::transport
