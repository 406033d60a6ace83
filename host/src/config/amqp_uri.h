// Checks broker URIs (amqp://[user[:password]@]host[:port][/vhost], or amqps://) and takes out
// the password they may hold, so that the stored URIs are safe to log and the password is
// resolved in one place (see load_broker_section).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace warren::config {

struct AmqpUri {
  bool tls = false;                     // amqps://
  std::optional<std::string> password;  // percent-decoded, when the URI holds one
  std::string without_password;         // the URI with ":password" removed
};

// nullopt with `why` set when malformed, or when rabbitmq-c (which the broker code parses the
// stored URI with) would refuse its user or vhost. `why` never contains the password.
std::optional<AmqpUri> parse_amqp_uri(std::string_view uri, std::string& why);

// What a broker URI looks like, for messages.
inline constexpr std::string_view kAmqpUriSyntax =
    "amqp://[user[:password]@]host[:port][/vhost] (or amqps:// for TLS)";

}  // namespace warren::config
