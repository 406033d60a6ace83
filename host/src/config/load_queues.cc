// Loading of [[queues]] and their bindings, with the rules RabbitMQ would otherwise enforce at
// declare time (or not at all, losing messages): quorum vs classic properties, dead-lettering,
// overflow, and references to declared exchanges.
#include <array>
#include <cstdint>
#include <utility>

#include "config/amqp_names.h"
#include "config/loader_sections.h"
#include "config/rabbitmq_only_keys.h"
#include "config/scalar_tables.h"

namespace warren::config {
namespace {

// x-arguments that have a typed key, so validation cannot be bypassed through `arguments`.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTypedArguments{{
    {"x-queue-type", "type"},
    {"x-dead-letter-exchange", "dead_letter_exchange"},
    {"x-dead-letter-routing-key", "dead_letter_routing_key"},
    {"x-delivery-limit", "delivery_limit"},
    {"x-dead-letter-strategy", "dead_letter_strategy"},
    {"x-message-ttl", "message_ttl"},
    {"x-max-length", "max_length"},
    {"x-overflow", "overflow"},
}};

void read_queue_arguments(TableReader& entry, QueueConfig& queue) {
  read_arguments(entry, "arguments", queue.arguments);
  const toml::node* node = entry.find("arguments");
  const toml::table* arguments = node != nullptr ? node->as_table() : nullptr;
  if (arguments == nullptr) {
    return;
  }
  for (const auto& [argument, typed_key] : kTypedArguments) {
    if (const toml::node* value = arguments->get(argument)) {
      entry.problems().add(value->source(), join_key(entry.path_of("arguments"), argument),
                           "set it with the queue key `" + std::string(typed_key) +
                               "` instead, so that it is checked");
    }
  }
}

void read_bindings(TableReader& entry, const Config& config, QueueConfig& queue) {
  read_array_of_tables(
      entry, "bindings", "write bindings = [ { exchange = \"...\", routing_key = \"...\" }, ... ]",
      [&](TableReader& binding_entry) {
        BindingConfig binding;
        if (binding_entry.require("exchange") &&
            binding_entry.read_string("exchange", binding.exchange)) {
          if (binding.exchange.empty()) {
            binding_entry.report("exchange",
                                 "cannot bind to the default exchange (\"\"): RabbitMQ refuses "
                                 "it, and it already routes to every queue by the queue's name");
          } else {
            check_exchange_reference(binding_entry, "exchange", binding.exchange, config);
          }
        }
        binding_entry.read_string("routing_key", binding.routing_key);
        read_arguments(binding_entry, "arguments", binding.arguments);
        queue.bindings.push_back(std::move(binding));
      });
}

void read_queue_name(TableReader& entry, const Config& config, QueueConfig& queue) {
  if (entry.require("name") && entry.read_non_empty_string("name", queue.name)) {
    check_declarable_name(entry, "name", queue.name);
    if (const QueueConfig* first = config.find_queue(queue.name)) {
      entry.report("name", "duplicate queue name " + in_quotes(queue.name) +
                               "; first declared at " + to_string(first->where));
    }
  }
}

// A queue in a table (transport = "sqlite"): a name and bindings. Rows that fail for good are
// `dead` in the same table (the dead-letter queue of the seed's system).
void read_table_queue_keys(TableReader& entry, const Config& config, QueueConfig& queue) {
  read_queue_name(entry, config, queue);
  read_bindings(entry, config, queue);
  refuse_rabbitmq_only_keys(entry,
                            {"type", "durable", "exclusive", "auto_delete", "server_named",
                             "delivery_limit", "dead_letter_strategy", "message_ttl", "max_length",
                             "overflow", "allow_message_loss", "arguments"},
                            config.broker);
  refuse_rabbitmq_only_keys(
      entry, {"dead_letter_exchange", "dead_letter_routing_key"}, config.broker,
      "a row that fails for good is `dead` in its own table, where `warren dlq` finds it");
}

void read_queue_keys(TableReader& entry, const Config& config, QueueConfig& queue) {
  read_queue_name(entry, config, queue);
  entry.read_enum<QueueType>("type", queue.type,
                             {{"classic", QueueType::classic}, {"quorum", QueueType::quorum}});
  entry.read_bool("durable", queue.durable);
  entry.read_bool("exclusive", queue.exclusive);
  entry.read_bool("auto_delete", queue.auto_delete);
  entry.read_bool("server_named", queue.server_named);
  if (entry.read_string("dead_letter_exchange", queue.dead_letter_exchange)) {
    check_exchange_reference(entry, "dead_letter_exchange", queue.dead_letter_exchange, config);
  }
  entry.read_string("dead_letter_routing_key", queue.dead_letter_routing_key);
  entry.read_integer("delivery_limit", queue.delivery_limit, 1, INT32_MAX);
  entry.read_one_of("dead_letter_strategy", queue.dead_letter_strategy,
                    {"at-most-once", "at-least-once"});
  entry.read_duration("message_ttl", queue.message_ttl);
  entry.read_integer("max_length", queue.max_length, 0, INT64_MAX);
  entry.read_one_of("overflow", queue.overflow,
                    {"drop-head", "reject-publish", "reject-publish-dlx"});
  entry.read_bool("allow_message_loss", queue.allow_message_loss);
  read_bindings(entry, config, queue);
  read_queue_arguments(entry, queue);
}

// Rules that involve several keys. Each is reported at the key to change.
void check_queue_rules(TableReader& entry, const QueueConfig& queue) {
  const bool quorum = queue.type == QueueType::quorum;
  const std::string quorum_queues =
      entry.find("type") != nullptr ? "quorum queues" : "quorum queues (the default type)";
  if (quorum && queue.exclusive) {
    entry.report("exclusive", quorum_queues + " cannot be exclusive; use type = \"classic\"");
  }
  if (quorum && !queue.durable) {
    entry.report("durable", quorum_queues +
                                " are always durable; use type = \"classic\" for a "
                                "non-durable queue");
  }
  if (quorum && queue.auto_delete) {
    entry.report("auto_delete", quorum_queues + " cannot be auto-deleted; use type = \"classic\"");
  }
  if (queue.server_named && (quorum || !queue.exclusive)) {
    entry.report("server_named",
                 "a server-named queue must be type = \"classic\" and exclusive = true: the broker "
                 "names it anew at each connect and deletes it with the connection");
  }
  if (!quorum && queue.delivery_limit) {
    entry.report("delivery_limit",
                 "only quorum queues have a delivery limit; remove it or use type = \"quorum\"");
  }
  if (quorum && queue.overflow == "reject-publish-dlx") {
    entry.report("overflow", quorum_queues +
                                 " support overflow = \"drop-head\" or "
                                 "\"reject-publish\" only");
  }
  if (queue.dead_letter_strategy == "at-least-once" &&
      (!quorum || queue.overflow != "reject-publish")) {
    entry.report("dead_letter_strategy",
                 "\"at-least-once\" dead-lettering needs type = \"quorum\" and overflow = "
                 "\"reject-publish\"; set both, or use \"at-most-once\"");
  }
  const bool has_dead_letter_exchange = !queue.dead_letter_exchange.empty();
  if (!queue.dead_letter_routing_key.empty() && !has_dead_letter_exchange) {
    entry.report("dead_letter_routing_key",
                 "is used only with a dead_letter_exchange; set dead_letter_exchange too");
  }
  if (quorum && !has_dead_letter_exchange && !queue.allow_message_loss) {
    entry.report("dead_letter_exchange",
                 "quorum queue " + in_quotes(queue.name) +
                     " has no dead_letter_exchange: RabbitMQ drops a message for good once it has "
                     "been delivered delivery_limit times (20 unless set), so messages that keep "
                     "failing would be lost without a trace. Set dead_letter_exchange (declared "
                     "in [[exchanges]]) to keep them, or allow_message_loss = true to accept it");
  }
}

}  // namespace

void load_queues(TableReader& root, const LoadContext& context, Config& config) {
  read_array_of_tables(root, "queues", "write one [[queues]] section per queue",
                       [&](TableReader& entry) {
                         QueueConfig queue;
                         queue.where = context.problems.locate(entry.source());
                         if (is_table_queue(config.broker)) {
                           read_table_queue_keys(entry, config, queue);
                         } else {
                           read_queue_keys(entry, config, queue);
                           check_queue_rules(entry, queue);
                         }
                         config.queues.push_back(std::move(queue));
                       });
}

}  // namespace warren::config
