// See routing.h.
#include "runtime/routing.h"

#include <string>
#include <variant>
#include <vector>

namespace warren::runtime {
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

std::string argument_text(const config::ArgumentValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else {
          return std::to_string(v);
        }
      },
      value);
}

}  // namespace

bool topic_matches(std::string_view pattern, std::string_view routing_key) {
  return match_words(split_words(pattern), 0, split_words(routing_key), 0);
}

bool binding_matches(config::ExchangeType type, const config::BindingConfig& binding,
                     std::string_view routing_key, const TextHeaders& headers) {
  switch (type) {
    case config::ExchangeType::direct:
      return binding.routing_key == routing_key;
    case config::ExchangeType::fanout:
      return true;
    case config::ExchangeType::topic:
      return topic_matches(binding.routing_key, routing_key);
    case config::ExchangeType::headers: {
      bool match_all = true;
      std::size_t wanted = 0;
      std::size_t matched = 0;
      for (const auto& [name, value] : binding.arguments) {
        if (name == "x-match") {
          match_all = argument_text(value) != "any";
          continue;
        }
        if (name.starts_with("x-"))
          continue;
        ++wanted;
        const auto actual = find_header(headers, name);
        if (actual && *actual == argument_text(value))
          ++matched;
      }
      return match_all ? matched == wanted : matched > 0;
    }
  }
  return false;
}

}  // namespace warren::runtime
