// The `pedido.registrado` event ("an order was placed"): the public contract between the
// Livraria's API, which publishes it through its outbox, and the workers that react to it.
//
//   {"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 42, "customer_id": "c-17",
//    "total": 79.8, "items": [{"product_id": 7, "quantity": 2, "unit_price": 39.9}],
//    "occurred_at": "2025-03-01T12:00:00Z"}
//
// Evolution: adding optional fields is safe (unknown fields are ignored here); removing or
// renaming one breaks consumers still running the old version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace livraria {

inline constexpr std::string_view kOrderPlacedRoutingKey = "pedido.registrado";

struct SoldItem {
  std::int64_t product_id = 0;
  std::int64_t quantity = 0;  // >= 1
  double unit_price = 0;
};

struct OrderPlaced {
  std::string event_id;  // a UUID: the idempotency key (the publisher's message_id, too)
  std::int64_t order_id = 0;
  std::string customer_id;
  double total = 0;
  std::vector<SoldItem> items;
  std::optional<std::string> occurred_at;  // ISO 8601, when present
};

// Parses and validates a `pedido.registrado` body. A body that can never become valid (malformed
// JSON, a missing or mistyped field, an event_id that is not a UUID) throws warren::PermanentError
// naming the field and why, so the message is dead-lettered at once instead of retried forever.
OrderPlaced parse_order_placed(std::string_view json_body);

}  // namespace livraria
