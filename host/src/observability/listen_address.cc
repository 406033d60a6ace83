// See listen_address.h.
#include "observability/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace warren::observability {
namespace {

[[noreturn]] void refuse(std::string_view text, std::string_view why) {
  throw std::invalid_argument("listen address \"" + std::string(text) + "\": " + std::string(why));
}

bool is_host_character(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) != 0 || c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
}

}  // namespace

ListenAddress ListenAddress::parse(std::string_view text) {
  ListenAddress address;
  std::string_view host;
  std::string_view port;
  if (text.starts_with('[')) {
    const std::size_t close = text.find("]:");
    if (close == std::string_view::npos)
      refuse(text, "an IPv6 address is written \"[::1]:9464\"");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    address.ipv6 = true;
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
      refuse(text, "expected host:port, e.g. \"127.0.0.1:9464\"");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      refuse(text, "put an IPv6 address in brackets, e.g. \"[::1]:9464\"");
  }
  if (host.empty())
    refuse(text, "the host is missing (use 0.0.0.0 for every IPv4 interface)");
  if (!std::all_of(host.begin(), host.end(), is_host_character))
    refuse(text, "the host may only hold letters, digits and . - _ : %");
  unsigned number = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || error != std::errc() || end != port.data() + port.size() || number > 65535)
    refuse(text, "the port must be a number from 0 to 65535");
  address.host = std::string(host);
  address.port = static_cast<std::uint16_t>(number);
  return address;
}

bool ListenAddress::is_loopback() const {
  if (host == "localhost")
    return true;
  if (ipv6) {
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) != 1)
      return false;
    if (IN6_IS_ADDR_LOOPBACK(&v6))
      return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) != 1)
    return false;
  return (ntohl(v4.s_addr) >> 24) == 127;
}

std::string ListenAddress::to_string() const {
  const std::string port_text = std::to_string(port);
  return ipv6 ? "[" + host + "]:" + port_text : host + ":" + port_text;
}

}  // namespace warren::observability
