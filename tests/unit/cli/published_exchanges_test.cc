// Issue 19 item 11: which exchanges warren_published_total labels by name: every exchange the
// configuration names (declared, bound to, dead-lettered to, an outbox's default) and the ones
// Warren publishes to itself; nothing that only the traffic names.
#include "cli/published_exchanges.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"

namespace warren::cli {
namespace {

using ::testing::ElementsAre;

TEST(PublishedExchangeLabels, EveryExchangeTheConfigNamesAndWarrensOwn) {
  const config::Config config = config::parse_config(R"(
[broker]
transport = "memory"

[[exchanges]]
name = "livraria.events"
type = "topic"

[[exchanges]]
name = "livraria.dead"
type = "fanout"

[[queues]]
name = "emails"
dead_letter_exchange = "livraria.dead"
bindings = [ { exchange = "livraria.events", routing_key = "order.#" },
             { exchange = "amq.topic", routing_key = "audit.#" } ]

[[workers]]
name = "emails"
plugin = "order_email"
queue = "emails"
)",
                                                     "test.toml");

  EXPECT_THAT(published_exchange_labels(config),
              ElementsAre("", "amq.topic", "livraria.dead", "livraria.events", "warren.delay.27",
                          "warren.delay.delivery"));
}

}  // namespace
}  // namespace warren::cli
