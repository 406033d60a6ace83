// The RabbitMQ that scripts/test and scripts/services/rabbitmq.sh start for the unit tests that
// need one (WARREN_TEST_AMQP_URI). Without it those tests skip, unless WARREN_REQUIRE_SERVICES=1,
// where they fail (CI never passes by skipping): WARREN_SKIP_OR_FAIL decides (required_services.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "broker/broker_endpoint.h"
#include "config/config.h"
#include "required_services.h"

namespace warren::broker::test_support {

inline std::optional<std::vector<BrokerEndpoint>> test_broker_endpoints() {
  const char* uri = std::getenv("WARREN_TEST_AMQP_URI");
  if (uri == nullptr || *uri == '\0')
    return std::nullopt;
  config::BrokerConfig broker;
  broker.uris.emplace_back(uri);
  return resolve_endpoints(broker);
}

}  // namespace warren::broker::test_support

// Declares `endpoints` (the test broker's) or ends the test: skipped, or failed when services
// are required.
#define TEST_BROKER_OR_SKIP(endpoints)                                            \
  const auto endpoints = ::warren::broker::test_support::test_broker_endpoints(); \
  if (!endpoints)                                                                 \
  WARREN_SKIP_OR_FAIL(                                                            \
      "no test broker: WARREN_TEST_AMQP_URI is not set (scripts/test, or "        \
      "scripts/services/rabbitmq.sh start DIR)")
