// See routing.h.
#include "transport/routing.h"

#include <algorithm>

namespace warren::transport {
namespace {

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      words.push_back(s.substr(start));
      return words;
    }
    words.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

bool match_words(const std::vector<std::string_view>& pattern, std::size_t p,
                 const std::vector<std::string_view>& key, std::size_t k) {
  while (p < pattern.size()) {
    if (pattern[p] == "#") {
      // `#` eats zero or more words: try every split.
      for (std::size_t rest = k; rest <= key.size(); ++rest) {
        if (match_words(pattern, p + 1, key, rest))
          return true;
      }
      return false;
    }
    if (k >= key.size())
      return false;
    if (pattern[p] != "*" && pattern[p] != key[k])
      return false;
    ++p;
    ++k;
  }
  return k == key.size();
}

}  // namespace

std::string_view exchange_type_name(ExchangeType type) noexcept {
  switch (type) {
    case ExchangeType::direct:
      return "direct";
    case ExchangeType::fanout:
      return "fanout";
    case ExchangeType::topic:
      return "topic";
    case ExchangeType::headers:
      return "headers";
  }
  return "direct";
}

bool topic_matches(std::string_view pattern, std::string_view routing_key) {
  return match_words(split_words(pattern), 0, split_words(routing_key), 0);
}

bool binding_matches(ExchangeType type, const Binding& binding, std::string_view routing_key,
                     const TextHeaders& headers) {
  switch (type) {
    case ExchangeType::direct:
      return binding.routing_key == routing_key;
    case ExchangeType::fanout:
      return true;
    case ExchangeType::topic:
      return topic_matches(binding.routing_key, routing_key);
    case ExchangeType::headers: {
      bool match_all = true;
      std::size_t wanted = 0;
      std::size_t matched = 0;
      for (const auto& [name, value] : binding.arguments) {
        if (name == "x-match") {
          match_all = value != "any";
          continue;
        }
        if (name.starts_with("x-"))
          continue;
        ++wanted;
        const auto actual = find_header(headers, name);
        if (actual && *actual == value)
          ++matched;
      }
      return match_all ? matched == wanted : matched > 0;
    }
  }
  return false;
}

void RoutingTable::add_queue(std::string name) {
  queues_.insert(std::move(name));
}

void RoutingTable::add_exchange(std::string name, ExchangeType type) {
  exchanges_[std::move(name)].type = type;
}

void RoutingTable::add_binding(const std::string& exchange, Binding binding) {
  if (auto it = exchanges_.find(exchange); it != exchanges_.end())
    it->second.bindings.push_back(std::move(binding));
}

bool RoutingTable::has_queue(std::string_view name) const {
  return queues_.find(name) != queues_.end();
}

bool RoutingTable::has_exchange(std::string_view name) const {
  return exchanges_.find(name) != exchanges_.end();
}

std::optional<std::vector<std::string>> RoutingTable::route(std::string_view exchange,
                                                            std::string_view routing_key,
                                                            const TextHeaders& headers) const {
  std::vector<std::string> targets;
  if (exchange.empty()) {
    if (has_queue(routing_key))
      targets.emplace_back(routing_key);
    return targets;
  }
  const auto it = exchanges_.find(exchange);
  if (it == exchanges_.end())
    return std::nullopt;
  for (const auto& binding : it->second.bindings) {
    if (binding_matches(it->second.type, binding, routing_key, headers) &&
        std::find(targets.begin(), targets.end(), binding.queue) == targets.end()) {
      targets.push_back(binding.queue);
    }
  }
  return targets;
}

std::vector<std::string> publish_targets(const RoutingTable& routing,
                                         const OutboundMessage& message) {
  auto queues = routing.route(message.exchange, message.routing_key, message.headers);
  if (!queues) {
    throw PublishError(PublishError::Reason::nacked,
                       "NOT_FOUND - no exchange '" + message.exchange + "'");
  }
  if (queues->empty() && message.mandatory) {
    throw PublishError(PublishError::Reason::returned,
                       unroutable_reason(message.exchange, message.routing_key));
  }
  return std::move(*queues);
}

std::string unroutable_reason(std::string_view exchange, std::string_view routing_key) {
  return "unroutable: no queue is bound to exchange '" + std::string(exchange) +
         "' for routing key '" + std::string(routing_key) + "'";
}

}  // namespace warren::transport
