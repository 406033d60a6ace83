// The `pedido.registrado` event ("an order was placed"): the public contract between the
// Livraria's API, which publishes it through its outbox, and the workers that react to it.
//
//   {"event_id": "3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b", "order_id": 42, "customer_id": "c-17",
//    "total": 79.8, "items": [{"product_id": 7, "quantity": 2, "unit_price": 39.9}],
//    "occurred_at": "2025-03-01T12:00:00Z", "sales_channel": "site", "version": 1}
//
// Evolution (docs/contracts.md): this reader is tolerant. Unknown fields are ignored, and the
// fields added after the first release are optional with an explicit default, because events
// published before a deploy are still queued when the new consumer starts: `sales_channel`
// (absent: "unknown") and `version` (absent: 1). `version` is the contract's major version: it
// changes only for a breaking change (a field removed, renamed or made required), and an event
// of a major this consumer does not know is dead-lettered with the reason, never guessed at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace livraria {

inline constexpr std::string_view kOrderPlacedRoutingKey = "pedido.registrado";
// The major version of the contract this code reads.
inline constexpr std::int64_t kOrderPlacedVersion = 1;
// The sales channel of an event published before the field existed.
inline constexpr std::string_view kUnknownSalesChannel = "unknown";

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
  std::optional<std::string> occurred_at;           // ISO 8601, when present
  std::string sales_channel{kUnknownSalesChannel};  // "site", "app", "store"...: optional
  std::int64_t version = kOrderPlacedVersion;       // the contract's major version
};

// Parses and validates a `pedido.registrado` body. A body that can never become valid (malformed
// JSON, a missing or mistyped field, an event_id that is not a UUID, a major version newer than
// kOrderPlacedVersion) throws warren::PermanentError naming the field and why, so the message is
// dead-lettered at once instead of retried forever.
OrderPlaced parse_order_placed(std::string_view json_body);

}  // namespace livraria
