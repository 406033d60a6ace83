// Broker URI checks and password extraction. Messages describe what is wrong without quoting
// the URI, which may hold a password.
#include "config/amqp_uri.h"

#include <charconv>
#include <cstdio>

namespace warren::config {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) {
      return std::nullopt;
    }
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// The broker code hands the stored URI to rabbitmq-c's amqp_parse_url, which ends the user and
// the vhost at any of : @ / ? # [ ] and takes only %-escapes of ASCII characters (%00-%7F):
// what it would refuse is refused here, where the message can point at the file. `what` is
// "the user" or "the vhost"; neither is secret, but the message still does not quote them.
bool check_user_or_vhost(std::string_view text, std::string_view what, std::string& why) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (std::string_view(":@/?#[]").find(text[i]) != std::string_view::npos) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "%%%02X", static_cast<unsigned char>(text[i]));
      why = std::string(what) + " holds '" + text[i] + "': percent-encode it as " + escape;
      return false;
    }
    if (text[i] != '%')
      continue;
    const int high = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
    if (high < 0 || low < 0 || high > 7) {
      why = std::string(what) +
            " holds a malformed or non-ASCII %-escape (the broker library accepts %00 to %7F)";
      return false;
    }
    i += 2;
  }
  return true;
}

// "host", "host:port", "[v6]" or "[v6]:port"; port 1..65535.
bool check_host_and_port(std::string_view authority, std::string& why) {
  std::string_view host = authority;
  std::optional<std::string_view> port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      why = "an IPv6 host must be written in brackets, like [::1]";
      return false;
    }
    host = authority.substr(1, close - 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        why = "unexpected text after the IPv6 host";
        return false;
      }
      port = rest.substr(1);
    }
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) {
    why = "the host is missing";
    return false;
  }
  if (port) {
    int number = 0;
    const char* end = port->data() + port->size();
    const auto [parsed_end, error] = std::from_chars(port->data(), end, number);
    if (port->empty() || error != std::errc() || parsed_end != end || number < 1 ||
        number > 65535) {
      why = "the port must be a number from 1 to 65535";
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<AmqpUri> parse_amqp_uri(std::string_view uri, std::string& why) {
  AmqpUri parsed;
  std::string_view scheme;
  if (uri.starts_with("amqp://")) {
    scheme = "amqp://";
  } else if (uri.starts_with("amqps://")) {
    scheme = "amqps://";
    parsed.tls = true;
  } else {
    why = "the scheme must be amqp:// or amqps://";
    return std::nullopt;
  }
  const std::string_view rest = uri.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    why = "query parameters and fragments are not supported; use the [broker] keys instead";
    return std::nullopt;
  }
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  std::string_view host_and_port = authority;
  std::string_view user;
  const std::size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view user_info = authority.substr(0, at);
    host_and_port = authority.substr(at + 1);
    const std::size_t colon = user_info.find(':');
    user = user_info.substr(0, colon);
    if (colon != std::string_view::npos) {
      parsed.password = percent_decode(user_info.substr(colon + 1));
      if (!parsed.password) {
        why = "the password holds a malformed %-escape";
        return std::nullopt;
      }
    }
  }
  if (!check_user_or_vhost(user, "the user", why)) {
    return std::nullopt;
  }
  if (!check_host_and_port(host_and_port, why)) {
    return std::nullopt;
  }
  if (!path.empty() && !check_user_or_vhost(path.substr(1), "the vhost", why)) {
    return std::nullopt;
  }
  parsed.without_password = std::string(scheme);
  if (!user.empty()) {
    parsed.without_password += std::string(user) + "@";
  }
  parsed.without_password += std::string(host_and_port) + std::string(path);
  return parsed;
}

}  // namespace warren::config
