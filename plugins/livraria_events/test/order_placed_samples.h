// Bodies of `pedido.registrado` events for the example plugins' tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "warren/testing/harness.h"

namespace warren::test_support {

// A UUID-shaped event id, distinct for each n.
inline std::string event_id(std::uint32_t n) {
  char id[37];
  std::snprintf(id, sizeof(id), "00000000-0000-4000-8000-%012u", n);
  return id;
}

struct Line {
  std::int64_t product_id;
  std::int64_t quantity;
  double unit_price = 10.0;
};

inline std::string order_placed_json(const std::string& id, std::int64_t order_id,
                                     const std::vector<Line>& lines) {
  std::string items;
  double total = 0;
  for (const Line& line : lines) {
    if (!items.empty())
      items += ", ";
    items += "{\"product_id\": " + std::to_string(line.product_id) +
             ", \"quantity\": " + std::to_string(line.quantity) +
             ", \"unit_price\": " + std::to_string(line.unit_price) + "}";
    total += static_cast<double>(line.quantity) * line.unit_price;
  }
  return "{\"event_id\": \"" + id + "\", \"order_id\": " + std::to_string(order_id) +
         ", \"customer_id\": \"c-17\", \"total\": " + std::to_string(total) + ", \"items\": [" +
         items + "], \"occurred_at\": \"2025-03-01T12:00:00Z\"}";
}

inline warren::testing::TestMessage order_placed_message(std::string body,
                                                         std::string message_id = "m-1") {
  warren::testing::TestMessage message;
  message.body = std::move(body);
  message.routing_key = "pedido.registrado";
  message.exchange = "livraria.eventos";
  message.content_type = "application/json";
  message.message_id = std::move(message_id);
  return message;
}

}  // namespace warren::test_support
