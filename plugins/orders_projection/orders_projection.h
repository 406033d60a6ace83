// orders_projection: the exactly-once pattern for a handler whose effect lives in PostgreSQL.
//
// Consumes `pedido.registrado` and keeps two tables in the Livraria's database: one row per order
// (orders_projection) and running totals per customer (customer_sales; an increment, so applying
// an event twice would count it twice). Delivery is at least once, so the handler makes the effect
// exactly-once itself: in ONE transaction it inserts (worker, message_id) into warren_inbox with
// ON CONFLICT DO NOTHING and, only when that inserted a row, applies the effect. A duplicate
// inserts nothing, is rolled back and acked; a crash before COMMIT undoes both, and the redelivery
// applies the effect once. (The host's own `idempotency` store only skips duplicates cheaply: it
// records after the handler returned, so it cannot make an effect exactly-once.)
//
//   [[workers]]
//   name = "projection"
//   plugin = "orders_projection"
//   [workers.settings]
//   dsn = "postgresql://livraria@db/livraria"   # required; the database holding warren_inbox
//
// Needs sql/outbox.sql applied (`warren outbox init`) for warren_inbox; creates its own two tables
// at start. Set `idempotency` on the worker too (same dsn) if warren_inbox rows should be pruned.
//
// Metrics: warren_plugin_projection_applied_total, warren_plugin_projection_duplicates_total.
#pragma once

#include <warren/sdk.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pg_session.h"

namespace livraria {

class OrdersProjection final : public warren::Handler {
 public:
  // Throws std::invalid_argument when dsn is missing or the database cannot be prepared.
  explicit OrdersProjection(warren::PluginContext& ctx);

  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override;

 private:
  std::unique_ptr<PgSession> acquire();
  void release(std::unique_ptr<PgSession> session);

  std::string dsn_;
  std::string worker_;
  warren::Counter applied_;
  warren::Counter duplicates_;
  std::mutex pool_mutex_;  // handle() runs on up to `concurrency` threads: one session each
  std::vector<std::unique_ptr<PgSession>> idle_;
};

}  // namespace livraria
