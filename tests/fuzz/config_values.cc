// Fuzz target: the scalar values of warren.toml that are parsed by hand: durations ("1h30m"),
// byte sizes ("512MiB"), broker URIs (amqp://user:password@host:port/vhost) and the [metrics]
// listen address. Each parses or is refused; a parsed duration or byte size formats to a text
// that parses back to it, and a parsed listen address prints to one that parses back to it.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "config/amqp_uri.h"
#include "config/byte_size.h"
#include "config/duration.h"
#include "fuzz_support.h"
#include "observability/listen_address.h"

using warren::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (const auto duration = warren::config::parse_duration(text)) {
    const std::string formatted = warren::config::format_duration(*duration);
    const auto again = warren::config::parse_duration(formatted);
    require(again && *again == *duration);  // format_duration reads back to the same value
  }

  const auto byte_size = warren::config::parse_byte_size(text);
  if (byte_size.problem == warren::config::ParsedByteSize::Problem::none) {
    const auto again =
        warren::config::parse_byte_size(warren::config::format_byte_size(byte_size.bytes));
    require(again.problem == warren::config::ParsedByteSize::Problem::none &&
            again.bytes == byte_size.bytes);  // format_byte_size reads back to the same value
  } else {
    require(byte_size.bytes == 0);  // a refused text carries no value
  }

  std::string why;
  if (const auto uri = warren::config::parse_amqp_uri(text, why)) {
    // The stored form is safe to log: it parses again, with no password left in it.
    std::string why_again;
    const auto stored = warren::config::parse_amqp_uri(uri->without_password, why_again);
    require(stored && !stored->password && stored->tls == uri->tls);
  }

  try {
    const auto address = warren::observability::ListenAddress::parse(text);
    (void)address.is_loopback();
    const auto again = warren::observability::ListenAddress::parse(address.to_string());
    require(again.host == address.host && again.port == address.port && again.ipv6 == address.ipv6);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
