// See pg_queue_routing.h.
#include "queue/pg_queue_routing.h"

#include <vector>

#include "postgres/pg_array.h"
#include "postgres/pg_identifier.h"
#include "postgres/pg_transaction.h"
#include "queue/headers_json.h"

namespace warren::queue {

PgRoutingCounts store_pg_routing(postgres::PgConnection& connection, const std::string& schema,
                                 const transport::RoutingTable& routing) {
  const std::vector<std::string> queues(routing.queues().begin(), routing.queues().end());
  std::vector<std::string> exchanges;
  std::vector<std::string> types;
  std::vector<std::string> bound_exchanges;
  std::vector<std::string> bound_queues;
  std::vector<std::string> keys;
  std::vector<std::string> arguments;
  for (const auto& [name, exchange] : routing.exchanges()) {
    exchanges.push_back(name);
    types.emplace_back(transport::exchange_type_name(exchange.type));
    for (const auto& binding : exchange.bindings) {
      bound_exchanges.push_back(name);
      bound_queues.push_back(binding.queue);
      keys.push_back(binding.routing_key);
      arguments.push_back(headers_to_json(binding.arguments));
    }
  }

  postgres::PgTransaction transaction(connection);
  connection.exec("SET LOCAL search_path TO " + postgres::quote_identifier(schema));
  // DELETE, not TRUNCATE: publishers reading the old routing meanwhile are not blocked.
  connection.exec("DELETE FROM warren_bindings");
  connection.exec("DELETE FROM warren_exchanges");
  connection.exec("DELETE FROM warren_queues");
  connection.exec_params("INSERT INTO warren_queues (name) SELECT unnest($1::text[])",
                         {postgres::pg_array_literal(queues)});
  connection.exec_params(
      "INSERT INTO warren_exchanges (name, type) SELECT * FROM unnest($1::text[], $2::text[])",
      {postgres::pg_array_literal(exchanges), postgres::pg_array_literal(types)});
  // In the table's order: warren_publish() inserts the copies in the order of the bindings.
  connection.exec_params(
      "INSERT INTO warren_bindings (exchange, queue, binding_key, arguments) "
      "SELECT b.exchange, b.queue, b.binding_key, b.arguments "
      "FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[]) WITH ORDINALITY "
      "AS b(exchange, queue, binding_key, arguments, position) ORDER BY b.position",
      {postgres::pg_array_literal(bound_exchanges), postgres::pg_array_literal(bound_queues),
       postgres::pg_array_literal(keys), postgres::pg_array_literal(arguments)});
  transaction.commit();
  return {queues.size(), exchanges.size(), bound_queues.size()};
}

}  // namespace warren::queue
