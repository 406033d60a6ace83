// `warren dlq list|peek|replay|purge`: the dead letters of one worker, for people.
//
// The worker's dead-letter queue is its `dead_letter_queue`, else the one queue the config binds
// to its dead-letter exchange (or --queue). A shared dead-letter queue holds other workers'
// letters too: a letter belongs to the worker named by x-warren-worker, or, for letters the broker
// dead-lettered itself (delivery limit, TTL), to the worker of x-first-death-queue.
//
// Nothing is acked before it is safe: replay acks each dead letter only after its republish is
// confirmed, and letters the tool does not move go back to the queue when it closes.
#include <charconv>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <thread>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/dead_letter_browser.h"
#include "broker/delay_levels.h"
#include "broker/publisher_connection.h"
#include "broker/rabbitmq_transport.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "observability/log.h"

namespace warren::cli {
namespace {

using broker::DeadLetter;

constexpr auto kIdle = std::chrono::seconds(2);
constexpr std::size_t kBodyPreview = 200;

// Headers the replay drops: they describe the failed life of the message, not the message.
bool is_failure_header(std::string_view name) {
  return name.starts_with("x-warren-") || broker::is_broker_death_header(name) ||
         name == "x-delivery-count";
}

std::string header_or(const runtime::InboundMessage& message, std::string_view name,
                      std::string fallback) {
  const auto value = runtime::find_header(message.headers, name);
  return value ? std::string(*value) : fallback;
}

// Where a dead letter was first published.
std::string original_exchange(const runtime::InboundMessage& message) {
  return header_or(message, "x-warren-original-exchange",
                   header_or(message, "x-first-death-exchange", message.exchange));
}
std::string original_routing_key(const runtime::InboundMessage& message) {
  return header_or(message, "x-warren-original-routing-key", message.routing_key);
}
std::string error_of(const runtime::InboundMessage& message) {
  if (auto error = runtime::find_header(message.headers, "x-warren-error")) {
    return std::string(*error);
  }
  if (auto reason = runtime::find_header(message.headers, "x-first-death-reason")) {
    return "dead-lettered by the broker: " + std::string(*reason);
  }
  return "(no reason recorded)";
}

// How often the letter was replayed before: its x-warren-replay-count, 0 when absent or not a
// number (the header travels with the message; anyone could have set it to anything).
std::uint64_t replay_count(const runtime::InboundMessage& message) {
  std::uint64_t count = 0;
  if (const auto text = runtime::find_header(message.headers, "x-warren-replay-count"))
    std::from_chars(text->data(), text->data() + text->size(), count);
  return count;
}

std::string preview(std::string_view body) {
  std::string out;
  for (const char c : body.substr(0, kBodyPreview)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += '.';
    } else {
      out += c;
    }
  }
  if (body.size() > kBodyPreview)
    out += "... (" + std::to_string(body.size()) + " bytes)";
  return out;
}

struct Selection {
  const config::WorkerConfig* worker = nullptr;
  std::string queue;
};

std::optional<Selection> select_queue(const config::Config& config, const DlqOptions& options) {
  Selection selection;
  selection.worker = config.find_worker(options.worker);
  if (selection.worker == nullptr) {
    std::cerr << "no worker named '" << options.worker << "' in " << config.file.string() << "\n";
    return std::nullopt;
  }
  if (!options.queue.empty()) {
    selection.queue = options.queue;
    return selection;
  }
  if (!selection.worker->dead_letter_queue.empty()) {
    selection.queue = selection.worker->dead_letter_queue;
    return selection;
  }
  const config::QueueConfig* source = config.find_queue(selection.worker->queue);
  const std::string exchange = !selection.worker->dead_letter_exchange.empty()
                                   ? selection.worker->dead_letter_exchange
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
  selection.queue = bound.front();
  return selection;
}

bool belongs_to(const runtime::InboundMessage& message, const config::WorkerConfig& worker) {
  if (auto owner = runtime::find_header(message.headers, "x-warren-worker")) {
    return *owner == worker.name;
  }
  if (auto queue = runtime::find_header(message.headers, "x-first-death-queue")) {
    return *queue == worker.queue;
  }
  return true;
}

bool matches(const runtime::InboundMessage& message, const std::vector<std::string>& where) {
  for (const auto& condition : where) {
    const auto equals = condition.find('=');
    const std::string name = condition.substr(0, equals);
    const std::string wanted = equals == std::string::npos ? "" : condition.substr(equals + 1);
    const auto value = runtime::find_header(message.headers, name);
    if (!value || *value != wanted)
      return false;
  }
  return true;
}

// The worker's letters that pass --where, at most --limit of them (0: all).
std::vector<DeadLetter> chosen(std::vector<DeadLetter> all, const Selection& selection,
                               const DlqOptions& options, std::size_t default_limit) {
  const std::size_t limit = options.limit > 0 ? options.limit : default_limit;
  std::vector<DeadLetter> result;
  for (auto& letter : all) {
    if (limit > 0 && result.size() >= limit)
      break;
    if (belongs_to(letter.message, *selection.worker) && matches(letter.message, options.where)) {
      result.push_back(std::move(letter));
    }
  }
  return result;
}

int list(broker::DeadLetterBrowser& browser, const Selection& selection,
         const DlqOptions& options) {
  const auto letters = chosen(browser.fetch(browser.message_count(), kIdle), selection, options, 0);
  std::map<std::string, std::size_t> by_error;
  std::map<std::string, std::size_t> by_routing_key;
  for (const auto& letter : letters) {
    ++by_error[error_of(letter.message)];
    ++by_routing_key[original_exchange(letter.message) + " / " +
                     original_routing_key(letter.message)];
  }
  std::cout << selection.queue << ": " << letters.size() << " dead letter(s) of worker '"
            << selection.worker->name << "' (" << browser.message_count()
            << " message(s) in the queue)\n";
  if (letters.empty())
    return kExitOk;
  std::cout << "\nby error:\n";
  for (const auto& [error, count] : by_error)
    std::cout << "  " << count << "  " << error << "\n";
  std::cout << "\nby original exchange / routing key:\n";
  for (const auto& [key, count] : by_routing_key)
    std::cout << "  " << count << "  " << key << "\n";
  return kExitOk;
}

int peek(broker::DeadLetterBrowser& browser, const Selection& selection,
         const DlqOptions& options) {
  const auto letters =
      chosen(browser.fetch(browser.message_count(), kIdle), selection, options, 10);
  for (const auto& letter : letters) {
    const auto& message = letter.message;
    std::cout << "message " << (message.message_id.empty() ? "(no id)" : message.message_id)
              << "\n";
    std::cout << "  original: " << original_exchange(message) << " / "
              << original_routing_key(message) << "\n";
    std::cout << "  error: " << error_of(message) << "\n";
    for (const auto& [name, value] : message.headers) {
      if (name == "x-warren-error")
        continue;
      std::cout << "  " << name << ": " << value << "\n";
    }
    if (!message.content_type.empty())
      std::cout << "  content-type: " << message.content_type << "\n";
    std::cout << "  body: " << preview(message.body) << "\n\n";
  }
  std::cout << letters.size() << " shown (messages stay in " << selection.queue << ")\n";
  return kExitOk;
}

int replay(const config::Config& config, broker::DeadLetterBrowser& browser,
           const Selection& selection, const DlqOptions& options) {
  const auto letters = chosen(browser.fetch(browser.message_count(), kIdle), selection, options, 0);
  if (options.dry_run) {
    for (const auto& letter : letters) {
      std::cout << "would move " << letter.message.message_id << " -> "
                << original_exchange(letter.message) << " / "
                << original_routing_key(letter.message) << "\n";
    }
    std::cout << letters.size() << " message(s) would be replayed (dry run: nothing moved)\n";
    return kExitOk;
  }
  broker::PublisherOptions publisher_options;
  publisher_options.endpoints = broker::resolve_endpoints(config.broker);
  publisher_options.connection =
      broker::connection_options(config.broker, "dlq replay", config.host.name);
  publisher_options.publish_timeout = config.broker.publish_timeout;
  broker::PublisherConnection publisher(std::move(publisher_options), nullptr, nullptr);

  const auto pause = options.rate > 0 ? std::chrono::duration<double>(1.0 / options.rate)
                                      : std::chrono::duration<double>(0);
  auto next = std::chrono::steady_clock::now();
  std::size_t moved = 0;
  for (const auto& letter : letters) {
    const auto& message = letter.message;
    runtime::OutboundMessage out = runtime::republished_copy(message, is_failure_header);
    out.headers.emplace_back("x-warren-replay-count", std::to_string(replay_count(message) + 1));
    if (options.to_queue) {
      // Only the worker's own queue, through the delay levels' delivery exchange (no delay); the
      // consumer shows the handler the original exchange and routing key.
      out.exchange = std::string(broker::kDelayDeliveryExchange);
      out.routing_key =
          broker::delay_routing_key(std::chrono::milliseconds(0), selection.worker->queue);
      out.headers.emplace_back("x-warren-original-exchange", original_exchange(message));
      out.headers.emplace_back("x-warren-original-routing-key", original_routing_key(message));
    } else {
      out.exchange = original_exchange(message);
      out.routing_key = original_routing_key(message);
    }
    if (pause.count() > 0) {
      std::this_thread::sleep_until(next);
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(pause);
    }
    try {
      publisher.publish(out);
    } catch (const runtime::PublishError& error) {
      std::cerr << "stopped: " << message.message_id << " could not be replayed: " << error.what()
                << "\n"
                << moved << " message(s) replayed; the rest stay in " << selection.queue << "\n";
      return kExitRuntimeFailure;
    }
    browser.ack(letter.tag);
    ++moved;
    std::cout << "moved " << message.message_id << " -> " << original_exchange(message) << " / "
              << original_routing_key(message) << (options.to_queue ? " (worker queue only)" : "")
              << "\n";
  }
  std::cout << moved << " message(s) replayed from " << selection.queue << "\n";
  return kExitOk;
}

int purge(broker::DeadLetterBrowser& browser, const Selection& selection,
          const DlqOptions& options) {
  if (!options.yes) {
    std::cerr << "purge deletes dead letters for good: add --yes to confirm (see `dlq list` "
                 "first)\n";
    return kExitBadUsageOrConfig;
  }
  const auto letters = chosen(browser.fetch(browser.message_count(), kIdle), selection, options, 0);
  if (options.dry_run) {
    std::cout << letters.size() << " message(s) would be deleted (dry run)\n";
    return kExitOk;
  }
  for (const auto& letter : letters)
    browser.ack(letter.tag);
  std::cout << letters.size() << " message(s) deleted from " << selection.queue << "\n";
  return kExitOk;
}

}  // namespace

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
  const auto selection = select_queue(*config, options);
  if (!selection)
    return kExitBadUsageOrConfig;
  try {
    broker::DeadLetterBrowser browser(*config, selection->queue);
    if (options.verb == "list")
      return list(browser, *selection, options);
    if (options.verb == "peek")
      return peek(browser, *selection, options);
    if (options.verb == "replay")
      return replay(*config, browser, *selection, options);
    if (options.verb == "purge")
      return purge(browser, *selection, options);
  } catch (const runtime::TransportError& error) {
    std::cerr << error.what() << "\n";
    return kExitRuntimeFailure;
  }
  return kExitBadUsageOrConfig;
}

}  // namespace warren::cli
