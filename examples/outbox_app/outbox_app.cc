// outbox_app: the Livraria's "register an order" as an application does it with the outbox.
//
// The order and its `pedido.registrado` event are written in ONE PostgreSQL transaction: the order
// row in the application's own table, the event through warren_outbox_enqueue() (sql/outbox.sql).
// Both are committed or neither is; the relay in `warren run` then publishes the event with
// publisher confirms, and the workers (order_email, sales_ranking, orders_projection) react to it.
// There is no call to RabbitMQ here, and nothing to lose if this process dies after COMMIT.
//
//   outbox_app --dsn postgresql://livraria@127.0.0.1/livraria [--customer c-17]
//              [--item PRODUCT:QUANTITY:UNIT_PRICE]... [--count N] [--rollback]
//
// --count N registers N orders (one transaction each); --rollback ends the transaction with
// ROLLBACK instead of COMMIT, to show that the event goes with the order: neither is kept.
// The event's id (event_id in the body) is also the message id consumers deduplicate on.
#include <libpq-fe.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Item {
  long product_id = 0;
  long quantity = 0;
  double unit_price = 0;
};

struct Options {
  std::string dsn;
  std::string customer = "c-17";
  std::vector<Item> items;
  long count = 1;
  bool rollback = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "outbox_app: %s\nusage: outbox_app --dsn DSN [--customer ID] "
               "[--item PRODUCT:QUANTITY:UNIT_PRICE]... [--count N] [--rollback]\n",
               problem.c_str());
  std::exit(2);
}

Item parse_item(const std::string& text) {
  Item item;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%ld:%ld:%lf%c", &item.product_id, &item.quantity, &item.unit_price,
                  &extra) != 3 ||
      item.quantity < 1 || item.unit_price < 0) {
    usage("--item takes PRODUCT:QUANTITY:UNIT_PRICE with QUANTITY >= 1, got '" + text + "'");
  }
  return item;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--dsn" && has_value) {
      options.dsn = argv[++i];
    } else if (arg == "--customer" && has_value) {
      options.customer = argv[++i];
    } else if (arg == "--item" && has_value) {
      options.items.push_back(parse_item(argv[++i]));
    } else if (arg == "--count" && has_value) {
      options.count = std::atol(argv[++i]);
      if (options.count < 1)
        usage("--count must be at least 1");
    } else if (arg == "--rollback") {
      options.rollback = true;
    } else {
      usage("unknown or incomplete argument '" + arg + "'");
    }
  }
  if (options.dsn.empty())
    usage("--dsn is required");
  if (options.items.empty())
    options.items = {{7, 2, 39.9}, {3, 1, 59.0}};
  return options;
}

// Runs one statement with text parameters; returns the first column of the first row (if any).
std::string exec(PGconn* db, const std::string& sql, const std::vector<std::string>& params = {}) {
  std::vector<const char*> values;
  for (const auto& param : params)
    values.push_back(param.c_str());
  PGresult* result = PQexecParams(db, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                  values.data(), nullptr, nullptr, 0);
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const std::string reason = PQresultErrorMessage(result);
    PQclear(result);
    throw std::runtime_error(sql.substr(0, 50) + "...: " + reason);
  }
  std::string first = PQntuples(result) > 0 ? PQgetvalue(result, 0, 0) : "";
  PQclear(result);
  return first;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// One order and its event, in one transaction. Returns "order N, event ID".
std::string register_order(PGconn* db, const Options& options) {
  double total = 0;
  nlohmann::json items = nlohmann::json::array();
  for (const Item& item : options.items) {
    total += static_cast<double>(item.quantity) * item.unit_price;
    items.push_back({{"product_id", item.product_id},
                     {"quantity", item.quantity},
                     {"unit_price", item.unit_price}});
  }

  exec(db, "BEGIN");
  try {
    // 1. The sale itself, in the application's own table.
    const std::string order_id =
        exec(db,
             "INSERT INTO livraria_pedidos (customer_id, total, items) VALUES ($1, $2, $3) "
             "RETURNING id",
             {options.customer, std::to_string(total), items.dump()});
    // 2. The fact, as the public contract (plugins/livraria_events/order_placed.h).
    const std::string event_id = exec(db, "SELECT gen_random_uuid()::text");
    const nlohmann::json event = {{"event_id", event_id},
                                  {"order_id", std::stol(order_id)},
                                  {"customer_id", options.customer},
                                  {"total", total},
                                  {"items", items},
                                  {"occurred_at", utc_now()}};
    exec(db,
         "SELECT warren_outbox_enqueue('livraria.eventos', 'pedido.registrado', "
         "convert_to($1, 'UTF8'), '{\"x-origin\": \"outbox_app\"}', $2)",
         {event.dump(), event_id});
    // 3. Both, or neither.
    exec(db, options.rollback ? "ROLLBACK" : "COMMIT");
    return "order " + order_id + ", event " + event_id;
  } catch (...) {
    PQclear(PQexec(db, "ROLLBACK"));
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  PGconn* db = PQconnectdb(options.dsn.c_str());
  if (PQstatus(db) != CONNECTION_OK) {
    std::fprintf(stderr, "outbox_app: cannot connect to PostgreSQL: %s", PQerrorMessage(db));
    PQfinish(db);
    return 1;
  }
  PQsetNoticeProcessor(
      db, [](void*, const char*) {}, nullptr);  // "already exists, skipping"
  try {
    exec(db,
         "CREATE TABLE IF NOT EXISTS livraria_pedidos ("
         "  id bigserial PRIMARY KEY, customer_id text NOT NULL, total numeric NOT NULL,"
         "  items jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
    for (long i = 0; i < options.count; ++i) {
      const std::string what = register_order(db, options);
      std::printf("%s %s\n", options.rollback ? "rolled back" : "registered", what.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "outbox_app: %s(is sql/outbox.sql applied? `warren outbox init -c FILE`)\n",
                 e.what());
    PQfinish(db);
    return 1;
  }
  PQfinish(db);
  return 0;
}
