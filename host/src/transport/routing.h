// AMQP 0-9-1 routing rules, for transports that route in-process (the in-memory transport and
// the table-as-queue transports, and the plugin test harness): the default exchange, direct,
// fanout, topic (`*` one word, `#` zero or more) and headers (x-match all|any) exchanges.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "transport/message.h"
#include "transport/transport.h"

namespace warren::transport {

enum class ExchangeType { direct, fanout, topic, headers };

struct Binding {
  std::string queue;
  std::string routing_key;
  // Headers exchanges: `x-match` and the header values to match, rendered as text.
  TextHeaders arguments;
};

// "direct", "fanout", "topic", "headers": the names AMQP and the config give them.
std::string_view exchange_type_name(ExchangeType type) noexcept;

bool topic_matches(std::string_view pattern, std::string_view routing_key);

// Whether a message with this routing key and these headers reaches a queue bound with
// `binding` to an exchange of type `type`.
bool binding_matches(ExchangeType type, const Binding& binding, std::string_view routing_key,
                     const TextHeaders& headers);

// The exchanges, queues and bindings of one topology.
class RoutingTable {
 public:
  struct Exchange {
    ExchangeType type = ExchangeType::direct;
    std::vector<Binding> bindings;  // in the order they were added
  };

  void add_queue(std::string name);
  void add_exchange(std::string name, ExchangeType type);
  // Binds a queue to a declared exchange (bindings to an unknown exchange are ignored: the
  // config loader refuses them before a table is built).
  void add_binding(const std::string& exchange, Binding binding);

  bool has_queue(std::string_view name) const;
  bool has_exchange(std::string_view name) const;
  // The queues a message reaches, each once, in binding order; nullopt when the exchange does
  // not exist. The default exchange ("") routes to the queue named by the routing key.
  std::optional<std::vector<std::string>> route(std::string_view exchange,
                                                std::string_view routing_key,
                                                const TextHeaders& headers) const;

  // Everything in the table, for a transport that routes elsewhere (the PostgreSQL queue stores
  // it in its routing tables for warren_publish()).
  const std::set<std::string, std::less<>>& queues() const noexcept { return queues_; }
  const std::map<std::string, Exchange, std::less<>>& exchanges() const noexcept {
    return exchanges_;
  }

 private:
  std::set<std::string, std::less<>> queues_;
  std::map<std::string, Exchange, std::less<>> exchanges_;
};

// The queues a publish reaches, as an in-process broker answers it: throws PublishError (nacked)
// when the exchange does not exist, and (returned) when a mandatory message reaches no queue; a
// message that is not mandatory and reaches none is dropped (an empty result). The errors read as
// the broker's: "NOT_FOUND - no exchange 'x'", "unroutable: no queue is bound to exchange 'x' for
// routing key 'k'".
std::vector<std::string> publish_targets(const RoutingTable& routing,
                                         const OutboundMessage& message);

// What a transport says of a message that reached no queue (publish_targets, the outbox relays).
std::string unroutable_reason(std::string_view exchange, std::string_view routing_key);

}  // namespace warren::transport
