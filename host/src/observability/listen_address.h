// The "host:port" of [metrics] listen, split and checked before civetweb sees it: civetweb reads
// commas as list separators and suffixes like "s" as TLS flags, so only a plain address and a
// numeric port get through. Also tells whether the address is loopback (anything else is
// reachable from other machines and deserves a warning).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warren::observability {

struct ListenAddress {
  std::string host;        // "127.0.0.1", "0.0.0.0", "localhost", "::1" (brackets removed)
  bool ipv6 = false;       // written in brackets: "[::1]:9464"
  std::uint16_t port = 0;  // 0: any free port (tests)

  // Throws std::invalid_argument saying what is wrong with `text`.
  static ListenAddress parse(std::string_view text);

  // 127.0.0.0/8, ::1 (or ::ffff:127.x.y.z) and "localhost".
  bool is_loopback() const;

  // "127.0.0.1:9464" or "[::1]:9464": the value of civetweb's listening_ports option.
  std::string to_string() const;
};

}  // namespace warren::observability
