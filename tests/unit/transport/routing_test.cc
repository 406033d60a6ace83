// Specification of AMQP routing as the in-process transports apply it.
#include "transport/routing.h"

#include <gtest/gtest.h>

namespace warren::transport {
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
  Binding binding{"q", "", {{"x-match", "all"}, {"kind", "order"}, {"region", "br"}}};
  const TextHeaders both{{"kind", "order"}, {"region", "br"}};
  const TextHeaders one{{"kind", "order"}};
  EXPECT_TRUE(binding_matches(ExchangeType::headers, binding, "", both));
  EXPECT_FALSE(binding_matches(ExchangeType::headers, binding, "", one));
  set_header(binding.arguments, "x-match", "any");
  EXPECT_TRUE(binding_matches(ExchangeType::headers, binding, "", one));
}

TEST(DirectAndFanoutRouting, DirectNeedsEqualityFanoutTakesAll) {
  Binding binding{"q", "a", {}};
  EXPECT_TRUE(binding_matches(ExchangeType::direct, binding, "a", {}));
  EXPECT_FALSE(binding_matches(ExchangeType::direct, binding, "b", {}));
  EXPECT_TRUE(binding_matches(ExchangeType::fanout, binding, "b", {}));
}

RoutingTable bookstore() {
  RoutingTable table;
  table.add_exchange("livraria.eventos", ExchangeType::topic);
  for (const char* queue : {"emails", "ranking", "audit"})
    table.add_queue(queue);
  table.add_binding("livraria.eventos", {"emails", "pedido.registrado", {}});
  table.add_binding("livraria.eventos", {"ranking", "pedido.*", {}});
  table.add_binding("livraria.eventos", {"audit", "#", {}});
  table.add_binding("livraria.eventos", {"audit", "pedido.#", {}});
  return table;
}

TEST(RoutingTable, RoutesToEveryMatchingQueueOnceInBindingOrder) {
  const auto queues = bookstore().route("livraria.eventos", "pedido.registrado", {});
  ASSERT_TRUE(queues.has_value());
  EXPECT_EQ(*queues, (std::vector<std::string>{"emails", "ranking", "audit"}));
}

TEST(RoutingTable, UnmatchedKeyRoutesNowhereButTheExchangeExists) {
  const auto table = bookstore();
  RoutingTable only_orders;
  only_orders.add_exchange("x", ExchangeType::direct);
  only_orders.add_queue("q");
  only_orders.add_binding("x", {"q", "a", {}});
  const auto queues = only_orders.route("x", "b", {});
  ASSERT_TRUE(queues.has_value());
  EXPECT_TRUE(queues->empty());
  EXPECT_TRUE(table.has_exchange("livraria.eventos"));
}

TEST(RoutingTable, UnknownExchangeIsNullopt) {
  EXPECT_FALSE(bookstore().route("nope", "pedido.registrado", {}).has_value());
  EXPECT_FALSE(bookstore().has_exchange("nope"));
}

TEST(RoutingTable, DefaultExchangeRoutesToTheQueueNamedByTheKey) {
  const auto table = bookstore();
  EXPECT_EQ(*table.route("", "ranking", {}), (std::vector<std::string>{"ranking"}));
  EXPECT_TRUE(table.route("", "missing", {})->empty());
}

TEST(RoutingTable, BindingToAnUnknownExchangeIsIgnored) {
  RoutingTable table;
  table.add_queue("q");
  table.add_binding("ghost", {"q", "#", {}});
  EXPECT_FALSE(table.route("ghost", "a", {}).has_value());
}

}  // namespace
}  // namespace warren::transport
