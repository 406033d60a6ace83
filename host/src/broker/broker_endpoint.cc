// See broker_endpoint.h. amqp_parse_url does the percent-decoding of user and vhost.
#include "broker/broker_endpoint.h"

#include <amqp.h>

#include <stdexcept>

namespace warren::broker {

std::string BrokerEndpoint::describe() const {
  return std::string(tls ? "amqps://" : "amqp://") + user + "@" + host + ":" +
         std::to_string(port) + (vhost == "/" ? "/" : "/" + vhost);
}

std::vector<BrokerEndpoint> resolve_endpoints(const config::BrokerConfig& broker) {
  std::vector<BrokerEndpoint> endpoints;
  for (const auto& uri : broker.uris) {
    std::string mutable_uri = uri;  // amqp_parse_url writes into its argument
    amqp_connection_info info{};
    if (amqp_parse_url(mutable_uri.data(), &info) != AMQP_STATUS_OK) {
      throw std::invalid_argument("cannot parse broker uri '" + uri + "'");
    }
    BrokerEndpoint endpoint;
    endpoint.host = info.host != nullptr ? info.host : "localhost";
    endpoint.port = info.port;
    endpoint.tls = info.ssl != 0;
    endpoint.vhost = info.vhost != nullptr && *info.vhost != '\0' ? info.vhost : "/";
    endpoint.user = info.user != nullptr ? info.user : "guest";
    if (!broker.vhost.empty())
      endpoint.vhost = broker.vhost;
    if (!broker.user.empty())
      endpoint.user = broker.user;
    endpoint.password = broker.password.empty() ? "guest" : broker.password;
    endpoints.push_back(std::move(endpoint));
  }
  return endpoints;
}

}  // namespace warren::broker
