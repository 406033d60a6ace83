// `warren dlq list|peek|replay|purge`: the dead letters of one worker, for people. The verbs are
// written once, over transport::DeadLetters; the transport decides where the letters are:
//
//   RabbitMQ  the worker's `dead_letter_queue`, else the one queue the config binds to its
//             dead-letter exchange (or --queue). A shared dead-letter queue holds other workers'
//             letters too: a letter belongs to the worker named by x-warren-worker, or, for
//             letters the broker dead-lettered itself (delivery limit, TTL), to the worker of
//             x-first-death-queue. Replay republishes with confirms into the worker's queue
//             (--original-route: to the original exchange and routing key), every property and
//             typed header of the letter kept (broker/rabbitmq_dead_letters.h).
//   SQLite    the dead rows of the worker's queue (or --queue) in the [broker.sqlite] file; replay
//             sets them back to pending in that queue (queue/sqlite_dead_rows.h).
//   PostgreSQL  the same, in the warren_queue of the [broker.postgres] schema
//             (queue/pg_dead_rows.h).
//
// Nothing is removed before it is safe: a letter leaves the dead ones only once it is back at
// work (a confirmed republish, a committed update).
#include <charconv>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "broker/amqp_table.h"
#include "broker/rabbitmq_dead_letters.h"
#include "cli/commands.h"
#include "cli/dlq_verbs.h"
#include "cli/exit_codes.h"
#include "cli/queue_database.h"
#include "observability/log.h"
#include "observability/terminal_escape.h"
#include "postgres/pg_connection.h"
#include "queue/pg_dead_rows.h"
#include "queue/pg_queue_schema.h"
#include "queue/sqlite_dead_rows.h"
#include "transport/dead_letters.h"
#include "transport/transport.h"

namespace warren::cli {
namespace {

using transport::DeadLetter;
using transport::DeadLetters;
// Everything printed from a letter (ids, headers, reasons, routing keys, the body) is whatever
// its publisher wrote: escaped, so that it cannot drive the operator's terminal or forge lines.
using observability::terminal_safe;

constexpr std::size_t kBodyPreview = 200;

// Headers the replay drops: they describe the failed life of the message, not the message.
bool is_failure_header(std::string_view name) {
  return name.starts_with("x-warren-") || broker::is_broker_death_header(name) ||
         name == "x-delivery-count";
}

// How often the letter was replayed before: its x-warren-replay-count, 0 when absent or not a
// number (the header travels with the message; anyone could have set it to anything).
std::uint64_t replay_count(const transport::InboundMessage& message) {
  std::uint64_t count = 0;
  if (const auto text = transport::find_header(message.headers, "x-warren-replay-count"))
    std::from_chars(text->data(), text->data() + text->size(), count);
  return count;
}

std::string preview(std::string_view body) {
  std::string out = terminal_safe(body.substr(0, kBodyPreview));
  if (body.size() > kBodyPreview)
    out += "... (" + std::to_string(body.size()) + " bytes)";
  return out;
}

// RabbitMQ: the worker's dead-letter queue, or nullopt after saying why it is not known.
std::optional<std::string> dead_letter_queue(const config::Config& config,
                                             const config::WorkerConfig& worker,
                                             const DlqOptions& options) {
  if (!options.queue.empty())
    return options.queue;
  if (!worker.dead_letter_queue.empty())
    return worker.dead_letter_queue;
  const config::QueueConfig* source = config.find_queue(worker.queue);
  const std::string exchange = !worker.dead_letter_exchange.empty()
                                   ? worker.dead_letter_exchange
                                   : (source != nullptr ? source->dead_letter_exchange : "");
  std::vector<std::string> bound;
  for (const auto& queue : config.queues) {
    for (const auto& binding : queue.bindings) {
      if (!exchange.empty() && binding.exchange == exchange) {
        bound.push_back(queue.name);
        break;
      }
    }
  }
  if (bound.size() != 1) {
    std::cerr << "worker '" << options.worker << "': "
              << (exchange.empty() ? "no dead-letter exchange"
                                   : std::to_string(bound.size()) +
                                         " queues bound to dead-letter exchange '" + exchange + "'")
              << "; name the queue with --queue, or set dead_letter_queue on the worker\n";
    return std::nullopt;
  }
  return bound.front();
}

bool belongs_to(const transport::InboundMessage& message, const config::WorkerConfig* chosen) {
  if (chosen == nullptr)
    return true;  // --queue alone: every letter in it
  const config::WorkerConfig& worker = *chosen;
  if (auto owner = transport::find_header(message.headers, "x-warren-worker")) {
    return *owner == worker.name;
  }
  if (auto queue = transport::find_header(message.headers, "x-first-death-queue")) {
    return *queue == worker.queue;
  }
  return true;
}

bool matches(const transport::InboundMessage& message, const std::vector<std::string>& where) {
  for (const auto& condition : where) {
    const auto equals = condition.find('=');
    const std::string name = condition.substr(0, equals);
    const std::string wanted = equals == std::string::npos ? "" : condition.substr(equals + 1);
    const auto value = transport::find_header(message.headers, name);
    if (!value || *value != wanted)
      return false;
  }
  return true;
}

// What a verb did with a letter handed to it.
enum class Handled {
  left,     // nothing: the letter stays dead (kept)
  settled,  // replayed or removed (or found gone meanwhile)
  stop,     // could not be handled: stop reading (the letter is kept if it can be)
};

// Reads the letters one at a time and hands the worker's letters that pass --where to `handle`,
// oldest first, until --limit of them (0: all) were handed. Every letter read and not settled is
// kept (left dead, as it was: DeadLetters::keep), the ones of other workers and those --where
// passes over included. Nothing is read beyond the limit, and no more than one letter is held
// at a time (a purge holds a chunk): `peek --limit 3` reads three letters (plus the ones it
// skips), not the queue.
// Returns how many were handed, or nullopt when `handle` said stop.
template <typename Handle>
std::optional<std::size_t> for_each_chosen(DeadLetters& letters, const config::WorkerConfig* worker,
                                           const DlqOptions& options, std::size_t default_limit,
                                           Handle handle) {
  const std::size_t limit = options.limit > 0 ? options.limit : default_limit;
  std::size_t handed = 0;
  while (limit == 0 || handed < limit) {
    std::optional<DeadLetter> letter = letters.next();
    if (!letter)
      break;
    if (!belongs_to(letter->message, worker) || !matches(letter->message, options.where)) {
      letters.keep(*letter);
      continue;
    }
    ++handed;
    switch (handle(*letter)) {
      case Handled::left:
        letters.keep(*letter);
        break;
      case Handled::settled:
        break;
      case Handled::stop:
        try {
          letters.keep(*letter);
        } catch (const transport::TransportError&) {
          // Not kept: it goes back to the queue when the tool closes.
        }
        return std::nullopt;
    }
  }
  return handed;
}

int list(DeadLetters& letters, const config::WorkerConfig* worker, const DlqOptions& options) {
  std::map<std::string, std::size_t> by_error;
  std::map<std::string, std::size_t> by_routing_key;
  const auto counted = for_each_chosen(letters, worker, options, 0, [&](const DeadLetter& letter) {
    ++by_error[terminal_safe(letter.error)];
    std::string key = terminal_safe(letter.original_exchange);
    key += " / ";
    key += terminal_safe(letter.original_routing_key);
    ++by_routing_key[key];
    return Handled::left;
  });
  std::cout << letters.queue() << ": " << counted.value_or(0) << " dead letter(s)"
            << (worker != nullptr ? " of worker '" + worker->name + "'" : std::string()) << " ("
            << letters.census() << ")\n";
  if (by_error.empty())
    return kExitOk;
  std::cout << "\nby error:\n";
  for (const auto& [error, count] : by_error)
    std::cout << "  " << count << "  " << error << "\n";
  std::cout << "\nby original exchange / routing key:\n";
  for (const auto& [key, count] : by_routing_key)
    std::cout << "  " << count << "  " << key << "\n";
  return kExitOk;
}

int peek(DeadLetters& letters, const config::WorkerConfig* worker, const DlqOptions& options) {
  const auto shown = for_each_chosen(letters, worker, options, 10, [&](const DeadLetter& letter) {
    const auto& message = letter.message;
    std::cout << "message "
              << (message.message_id.empty() ? "(no id)" : terminal_safe(message.message_id))
              << "\n";
    std::cout << "  original: " << terminal_safe(letter.original_exchange) << " / "
              << terminal_safe(letter.original_routing_key) << "\n";
    std::cout << "  error: " << terminal_safe(letter.error) << "\n";
    for (const auto& [name, value] : message.headers) {
      if (name == "x-warren-error")
        continue;
      std::cout << "  " << terminal_safe(name) << ": " << terminal_safe(value) << "\n";
    }
    if (!message.content_type.empty())
      std::cout << "  content-type: " << terminal_safe(message.content_type) << "\n";
    std::cout << "  body: " << preview(message.body) << "\n\n";
    return Handled::left;
  });
  std::cout << shown.value_or(0) << " shown (messages stay in " << letters.queue() << ")\n";
  return kExitOk;
}

// After "exchange / routing key": where a replay really delivers.
const char* where_to(const DeadLetters& letters) {
  return letters.replays_into_worker_queue_only() ? " (worker queue only)" : "";
}

int replay(DeadLetters& letters, const config::WorkerConfig* worker, const DlqOptions& options) {
  if (options.dry_run) {
    const auto would = for_each_chosen(letters, worker, options, 0, [&](const DeadLetter& letter) {
      std::cout << "would move " << terminal_safe(letter.message.message_id) << " -> "
                << terminal_safe(letter.original_exchange) << " / "
                << terminal_safe(letter.original_routing_key) << where_to(letters) << "\n";
      return Handled::left;
    });
    std::cout << would.value_or(0) << " message(s) would be replayed (dry run: nothing moved)\n";
    return kExitOk;
  }
  const auto pause = options.rate > 0 ? std::chrono::duration<double>(1.0 / options.rate)
                                      : std::chrono::duration<double>(0);
  auto next = std::chrono::steady_clock::now();
  std::size_t moved = 0;
  const auto handed = for_each_chosen(letters, worker, options, 0, [&](const DeadLetter& letter) {
    const auto& message = letter.message;
    transport::OutboundMessage out = transport::republished_copy(message, is_failure_header);
    out.headers.emplace_back("x-warren-replay-count", std::to_string(replay_count(message) + 1));
    out.exchange = letter.original_exchange;
    out.routing_key = letter.original_routing_key;
    if (pause.count() > 0) {
      std::this_thread::sleep_until(next);
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(pause);
    }
    try {
      if (!letters.replay(letter, out)) {
        std::cout << "skipped " << terminal_safe(message.message_id)
                  << ": no longer a dead letter (replayed or purged meanwhile)\n";
        return Handled::settled;
      }
    } catch (const transport::PublishError& error) {
      std::cerr << "stopped: " << terminal_safe(message.message_id)
                << " could not be replayed: " << error.what() << "\n"
                << moved << " message(s) replayed; the rest stay in " << letters.queue() << "\n";
      return Handled::stop;
    }
    ++moved;
    std::cout << "moved " << terminal_safe(message.message_id) << " -> "
              << terminal_safe(letter.original_exchange) << " / "
              << terminal_safe(letter.original_routing_key) << where_to(letters) << "\n";
    return Handled::settled;
  });
  if (!handed)
    return kExitRuntimeFailure;
  std::cout << moved << " message(s) replayed from " << letters.queue() << "\n";
  return kExitOk;
}

// Letters a purge holds before it deletes them together (the SQLite queue deletes them in one
// transaction; RabbitMQ holds them unacked meanwhile).
constexpr std::size_t kPurgeChunk = 500;

int purge(DeadLetters& letters, const config::WorkerConfig* worker, const DlqOptions& options) {
  if (!options.yes) {
    std::cerr << "purge deletes dead letters for good: add --yes to confirm (see `dlq list` "
                 "first)\n";
    return kExitBadUsageOrConfig;
  }
  if (options.dry_run) {
    const auto would = for_each_chosen(letters, worker, options, 0,
                                       [](const DeadLetter&) { return Handled::left; });
    std::cout << would.value_or(0) << " message(s) would be deleted (dry run)\n";
    return kExitOk;
  }
  std::vector<DeadLetter> chunk;
  std::size_t deleted = 0;
  for_each_chosen(letters, worker, options, 0, [&](const DeadLetter& letter) {
    chunk.push_back(letter);
    if (chunk.size() >= kPurgeChunk) {
      deleted += letters.remove(chunk);
      chunk.clear();
    }
    return Handled::settled;
  });
  deleted += letters.remove(chunk);
  std::cout << deleted << " message(s) deleted from " << letters.queue() << "\n";
  return kExitOk;
}

}  // namespace

int run_dlq_verb(DeadLetters& letters, const config::WorkerConfig* worker,
                 const DlqOptions& options) {
  if (options.verb == "list")
    return list(letters, worker, options);
  if (options.verb == "peek")
    return peek(letters, worker, options);
  if (options.verb == "replay")
    return replay(letters, worker, options);
  if (options.verb == "purge")
    return purge(letters, worker, options);
  return kExitBadUsageOrConfig;
}

int dlq_command(const ConfigOptions& config_options, const DlqOptions& options) {
  const auto config = load_config_for_cli(config_options);
  if (!config)
    return kExitBadUsageOrConfig;
  observability::configure_logging("warn", observability::LogFormat::text);
  for (const auto& condition : options.where) {
    if (condition.find('=') == std::string::npos) {
      std::cerr << "--where takes HEADER=VALUE, got '" << condition << "'\n";
      return kExitBadUsageOrConfig;
    }
  }
  if (options.worker.empty() && options.queue.empty()) {
    std::cerr << "dlq " << options.verb
              << ": name the dead letters with --worker W (its dead-letter queue), --queue NAME "
                 "(every letter in that queue), or both\n";
    return kExitBadUsageOrConfig;
  }
  const config::WorkerConfig* worker = nullptr;
  if (!options.worker.empty()) {
    worker = config->find_worker(options.worker);
    if (worker == nullptr) {
      std::cerr << "no worker named '" << options.worker << "' in " << config->file.string()
                << "\n";
      return kExitBadUsageOrConfig;
    }
  }
  try {
    switch (config->broker.transport) {
      case config::BrokerConfig::Transport::rabbitmq: {
        const auto queue =
            worker != nullptr ? dead_letter_queue(*config, *worker, options) : options.queue;
        if (!queue)
          return kExitBadUsageOrConfig;
        // Without a worker, each letter goes back into the queue it was dead-lettered from.
        broker::RabbitMqDeadLetters letters(*config, *queue,
                                            worker != nullptr ? worker->queue : std::string(),
                                            !options.original_route);
        return run_dlq_verb(letters, worker, options);
      }
      case config::BrokerConfig::Transport::sqlite: {
        if (options.original_route) {
          std::cerr << "dlq replay --original-route: on the SQLite queue a dead row goes back to "
                       "its own queue only\n";
          return kExitBadUsageOrConfig;
        }
        const auto database = open_queue_database(*config);
        queue::SqliteDeadRows rows(*database,
                                   options.queue.empty() ? worker->queue : options.queue);
        return run_dlq_verb(rows, worker, options);
      }
      case config::BrokerConfig::Transport::postgres: {
        if (options.original_route) {
          std::cerr << "dlq replay --original-route: on the PostgreSQL queue a dead row goes back "
                       "to its own queue only\n";
          return kExitBadUsageOrConfig;
        }
        const auto database = open_pg_queue_database(*config, "warren dlq " + options.verb);
        queue::PgDeadRows rows(*database, options.queue.empty() ? worker->queue : options.queue);
        return run_dlq_verb(rows, worker, options);
      }
      case config::BrokerConfig::Transport::memory:
        break;
    }
  } catch (const queue::SqliteError& error) {
    std::cerr << "dlq: " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (const queue::PgQueueSchemaError& error) {
    std::cerr << "dlq: " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (const postgres::PgError& error) {
    std::cerr << "dlq: " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (const transport::TransportError& error) {
    std::cerr << error.what() << "\n";
    return kExitRuntimeFailure;
  }
  std::cerr << "dlq: " << config->file.string()
            << " uses the in-memory transport, whose dead letters live only inside the running "
               "process; `warren dlq` works on RabbitMQ and on the SQLite and PostgreSQL queues\n";
  return kExitBadUsageOrConfig;
}

}  // namespace warren::cli
