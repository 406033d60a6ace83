// Loading of [[exchanges]]: the exchanges the host declares at each connect.
#include "config/amqp_names.h"
#include "config/loader_sections.h"
#include "config/rabbitmq_only_keys.h"
#include "config/scalar_tables.h"

namespace warren::config {

void load_exchanges(TableReader& root, const LoadContext& context, Config& config) {
  read_array_of_tables(
      root, "exchanges", "write one [[exchanges]] section per exchange", [&](TableReader& entry) {
        ExchangeConfig exchange;
        exchange.where = context.problems.locate(entry.source());
        if (entry.require("name") && entry.read_non_empty_string("name", exchange.name)) {
          check_declarable_name(entry, "name", exchange.name);
          if (const ExchangeConfig* first = config.find_exchange(exchange.name)) {
            entry.report("name", "duplicate exchange name " + in_quotes(exchange.name) +
                                     "; first declared at " + to_string(first->where));
          }
        }
        if (entry.require("type", "one of direct, fanout, topic, headers")) {
          entry.read_enum<ExchangeType>("type", exchange.type,
                                        {{"direct", ExchangeType::direct},
                                         {"fanout", ExchangeType::fanout},
                                         {"topic", ExchangeType::topic},
                                         {"headers", ExchangeType::headers}});
        }
        if (is_table_queue(config.broker)) {
          refuse_rabbitmq_only_keys(entry, {"durable", "auto_delete", "arguments"}, config.broker);
        } else {
          entry.read_bool("durable", exchange.durable);
          entry.read_bool("auto_delete", exchange.auto_delete);
          read_arguments(entry, "arguments", exchange.arguments);
        }
        config.exchanges.push_back(std::move(exchange));
      });
}

}  // namespace warren::config
