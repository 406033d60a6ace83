// OrdersProjection: tables at start; per message one transaction of inbox row + effect.
#include "orders_projection.h"

#include <cstdio>
#include <stdexcept>

#include "order_placed.h"

namespace livraria {
namespace {

constexpr const char* kCreateTables =
    "CREATE TABLE IF NOT EXISTS orders_projection ("
    "  event_id text PRIMARY KEY, order_id bigint NOT NULL, customer_id text NOT NULL,"
    "  total numeric NOT NULL, items integer NOT NULL,"
    "  projected_at timestamptz NOT NULL DEFAULT now())";
constexpr const char* kCreateTotals =
    "CREATE TABLE IF NOT EXISTS customer_sales ("
    "  customer_id text PRIMARY KEY, orders bigint NOT NULL, total numeric NOT NULL)";

std::string required_dsn(const warren::PluginContext& ctx) {
  const auto dsn = ctx.setting("dsn");
  if (!dsn || dsn->empty()) {
    throw std::invalid_argument(
        "orders_projection: setting 'dsn' is required: the PostgreSQL database holding "
        "warren_inbox (sql/outbox.sql), e.g. dsn = \"postgresql://livraria@db/livraria\" under "
        "[workers.settings]");
  }
  return *dsn;
}

}  // namespace

OrdersProjection::OrdersProjection(warren::PluginContext& ctx)
    : dsn_(required_dsn(ctx)),
      worker_(ctx.worker_name()),
      applied_(ctx.counter("projection_applied_total", "Order events applied to the projection")),
      duplicates_(ctx.counter("projection_duplicates_total",
                              "Duplicate order events recognised in warren_inbox")) {
  try {
    PgSession session(dsn_);
    session.exec(kCreateTables);
    session.exec(kCreateTotals);
    session.exec("SELECT 1 FROM warren_inbox LIMIT 0");
    release(std::make_unique<PgSession>(dsn_));
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(std::string(e.what()) +
                                " (is sql/outbox.sql applied? `warren outbox init -c FILE`)");
  }
}

std::unique_ptr<PgSession> OrdersProjection::acquire() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_.empty()) {
      auto session = std::move(idle_.back());
      idle_.pop_back();
      return session;
    }
  }
  return std::make_unique<PgSession>(dsn_);
}

void OrdersProjection::release(std::unique_ptr<PgSession> session) {
  if (!session->ok())
    return;
  std::lock_guard lock(pool_mutex_);
  idle_.push_back(std::move(session));
}

warren::Outcome OrdersProjection::handle(const warren::Message& msg, warren::Context& ctx) {
  if (msg.routing_key() != kOrderPlacedRoutingKey)
    return warren::Outcome::ack();
  const OrderPlaced order = parse_order_placed(msg.body());  // PermanentError: dead-lettered
  const std::string message_id =
      msg.message_id().empty() ? order.event_id : std::string(msg.message_id());

  auto session = acquire();
  try {
    session->exec("BEGIN");
    const long first_time = session->exec(
        "INSERT INTO warren_inbox (worker, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        {worker_, message_id});
    if (first_time == 0) {
      session->exec("ROLLBACK");
      release(std::move(session));
      duplicates_.inc();
      ctx.log_info("orders_projection: event " + message_id + " (order " +
                   std::to_string(order.order_id) + ") already applied; duplicate acked");
      return warren::Outcome::ack();
    }
    std::int64_t items = 0;
    for (const SoldItem& item : order.items)
      items += item.quantity;
    char total[32];
    std::snprintf(total, sizeof(total), "%.15g", order.total);
    session->exec(
        "INSERT INTO orders_projection (event_id, order_id, customer_id, total, items) "
        "VALUES ($1, $2, $3, $4, $5)",
        {order.event_id, std::to_string(order.order_id), order.customer_id, total,
         std::to_string(items)});
    session->exec(
        "INSERT INTO customer_sales (customer_id, orders, total) VALUES ($1, 1, $2) "
        "ON CONFLICT (customer_id) DO UPDATE SET orders = customer_sales.orders + 1, "
        "total = customer_sales.total + excluded.total",
        {order.customer_id, total});
    session->exec("COMMIT");
  } catch (...) {
    session->rollback_quietly();
    release(std::move(session));
    throw;  // retried under the worker's policy: nothing of this attempt was applied
  }
  release(std::move(session));
  applied_.inc();
  return warren::Outcome::ack();
}

}  // namespace livraria
