// Where and how to log in: the [broker] uris (tried in turn for failover) resolved with the
// vhost/user overrides and the password the config loader found.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace warren::broker {

struct BrokerEndpoint {
  std::string host;
  int port = 5672;
  bool tls = false;
  std::string vhost = "/";
  std::string user = "guest";
  std::string password;

  // "amqp://user@host:port/vhost" (never the password), for logs.
  std::string describe() const;
};

// Throws std::invalid_argument naming the uri when one cannot be parsed (the loader has checked
// them, so this is a bug guard).
std::vector<BrokerEndpoint> resolve_endpoints(const config::BrokerConfig& broker);

}  // namespace warren::broker
