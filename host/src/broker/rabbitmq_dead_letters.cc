// See rabbitmq_dead_letters.h.
#include "broker/rabbitmq_dead_letters.h"

#include <chrono>

#include "broker/rabbitmq_transport.h"
#include "broker/wire_properties.h"

namespace warren::broker {
namespace {

// How long a fetch waits for the next letter before it takes what it has.
constexpr auto kIdle = std::chrono::seconds(2);

std::string header_or(const transport::InboundMessage& message, std::string_view name,
                      std::string fallback) {
  const auto value = transport::find_header(message.headers, name);
  return value ? std::string(*value) : fallback;
}

std::string error_of(const transport::InboundMessage& message) {
  if (auto error = transport::find_header(message.headers, "x-warren-error")) {
    return std::string(*error);
  }
  if (auto reason = transport::find_header(message.headers, "x-first-death-reason")) {
    return "dead-lettered by the broker: " + std::string(*reason);
  }
  return "(no reason recorded)";
}

}  // namespace

RabbitMqDeadLetters::RabbitMqDeadLetters(const config::Config& config, std::string queue,
                                         std::string worker_queue, bool to_worker_queue)
    : config_(config),
      queue_(std::move(queue)),
      worker_queue_(std::move(worker_queue)),
      to_worker_queue_(to_worker_queue),
      browser_(config, queue_) {}

RabbitMqDeadLetters::~RabbitMqDeadLetters() = default;

std::string RabbitMqDeadLetters::census() const {
  return std::to_string(browser_.message_count()) + " message(s) in the queue";
}

std::vector<transport::DeadLetter> RabbitMqDeadLetters::fetch() {
  std::vector<transport::DeadLetter> letters;
  for (auto& fetched : browser_.fetch(browser_.message_count(), kIdle)) {
    transport::DeadLetter letter;
    letter.handle = fetched.tag;
    letter.message = std::move(fetched.message);
    const auto& message = letter.message;
    letter.error = error_of(message);
    letter.original_exchange =
        header_or(message, "x-warren-original-exchange",
                  header_or(message, "x-first-death-exchange", message.exchange));
    letter.original_routing_key =
        header_or(message, "x-warren-original-routing-key", message.routing_key);
    letters.push_back(std::move(letter));
  }
  return letters;
}

bool RabbitMqDeadLetters::replay(const transport::DeadLetter& letter,
                                 const transport::OutboundMessage& copy) {
  if (!publisher_) {
    PublisherOptions options;
    options.endpoints = resolve_endpoints(config_.broker);
    options.connection = connection_options(config_.broker, "dlq replay", config_.host.name);
    options.publish_timeout = config_.broker.publish_timeout;
    publisher_ = std::make_unique<PublisherConnection>(std::move(options), nullptr, nullptr);
  }
  transport::OutboundMessage out = copy;
  restore_expiration(out, letter.message);
  if (to_worker_queue_) {
    // Through the default exchange, which every broker has (the delay levels' delivery exchange
    // exists only once a host has run); the consumer shows the handler the original exchange and
    // routing key.
    out.exchange.clear();
    out.routing_key = worker_queue_;
    transport::set_header(out.headers, "x-warren-original-exchange", letter.original_exchange);
    transport::set_header(out.headers, "x-warren-original-routing-key",
                          letter.original_routing_key);
  }
  publisher_->publish(out);
  browser_.ack(letter.handle);
  return true;
}

std::size_t RabbitMqDeadLetters::remove(const std::vector<transport::DeadLetter>& letters) {
  for (const auto& letter : letters)
    browser_.ack(letter.handle);
  return letters.size();
}

}  // namespace warren::broker
