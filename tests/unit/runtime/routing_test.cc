// Specification of AMQP routing as the in-process transports apply it.
#include "runtime/routing.h"

#include <gtest/gtest.h>

namespace warren::runtime {
namespace {

TEST(TopicRouting, StarMatchesExactlyOneWord) {
  EXPECT_TRUE(topic_matches("pedido.*", "pedido.registrado"));
  EXPECT_FALSE(topic_matches("pedido.*", "pedido"));
  EXPECT_FALSE(topic_matches("pedido.*", "pedido.registrado.v2"));
}

TEST(TopicRouting, HashMatchesZeroOrMoreWords) {
  EXPECT_TRUE(topic_matches("produto.#", "produto"));
  EXPECT_TRUE(topic_matches("produto.#", "produto.alterado"));
  EXPECT_TRUE(topic_matches("produto.#", "produto.preco.alterado"));
  EXPECT_TRUE(topic_matches("#", ""));
  EXPECT_TRUE(topic_matches("#.alterado", "produto.preco.alterado"));
  EXPECT_FALSE(topic_matches("produto.#", "pedido.registrado"));
}

TEST(TopicRouting, LiteralWordsMustBeEqual) {
  EXPECT_TRUE(topic_matches("pedido.registrado", "pedido.registrado"));
  EXPECT_FALSE(topic_matches("pedido.registrado", "pedido.cancelado"));
}

TEST(HeadersRouting, AllAndAny) {
  config::BindingConfig binding;
  binding.arguments = {{"x-match", std::string("all")},
                       {"kind", std::string("order")},
                       {"region", std::string("br")}};
  const TextHeaders both{{"kind", "order"}, {"region", "br"}};
  const TextHeaders one{{"kind", "order"}};
  EXPECT_TRUE(binding_matches(config::ExchangeType::headers, binding, "", both));
  EXPECT_FALSE(binding_matches(config::ExchangeType::headers, binding, "", one));
  binding.arguments["x-match"] = std::string("any");
  EXPECT_TRUE(binding_matches(config::ExchangeType::headers, binding, "", one));
}

TEST(DirectAndFanoutRouting, DirectNeedsEqualityFanoutTakesAll) {
  config::BindingConfig binding;
  binding.routing_key = "a";
  EXPECT_TRUE(binding_matches(config::ExchangeType::direct, binding, "a", {}));
  EXPECT_FALSE(binding_matches(config::ExchangeType::direct, binding, "b", {}));
  EXPECT_TRUE(binding_matches(config::ExchangeType::fanout, binding, "b", {}));
}

}  // namespace
}  // namespace warren::runtime
