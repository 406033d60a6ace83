// See rabbitmq_dead_letters.h.
#include "broker/rabbitmq_dead_letters.h"

#include "broker/rabbitmq_transport.h"
#include "broker/wire_properties.h"

namespace warren::broker {
namespace {

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
    // rejected, expired, maxlen or delivery_limit; and from which queue.
    std::string error = "dead-lettered by the broker: " + std::string(*reason);
    if (auto queue = transport::find_header(message.headers, "x-first-death-queue"))
      error += " (in queue '" + std::string(*queue) + "')";
    return error;
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

std::optional<transport::DeadLetter> RabbitMqDeadLetters::next() {
  auto fetched = browser_.next();
  if (!fetched)
    return std::nullopt;
  transport::DeadLetter letter;
  letter.handle = fetched->tag;
  letter.message = std::move(fetched->message);
  const auto& message = letter.message;
  letter.error = error_of(message);
  letter.original_exchange =
      header_or(message, "x-warren-original-exchange",
                header_or(message, "x-first-death-exchange", message.exchange));
  letter.original_routing_key =
      header_or(message, "x-warren-original-routing-key", message.routing_key);
  return letter;
}

PublisherConnection& RabbitMqDeadLetters::publisher() {
  if (!publisher_) {
    PublisherOptions options;
    options.endpoints = resolve_endpoints(config_.broker);
    options.connection = connection_options(config_.broker, "dlq", config_.host.name);
    options.publish_timeout = config_.broker.publish_timeout;
    publisher_ = std::make_unique<PublisherConnection>(std::move(options), nullptr, nullptr);
  }
  return *publisher_;
}

void RabbitMqDeadLetters::keep(const transport::DeadLetter& letter) {
  // The letter as it is, expiration included (a dead letter has none unless its publisher put
  // it there); only the broker's count of its deliveries goes, the copy is delivered afresh.
  transport::OutboundMessage copy = transport::republished_copy(
      letter.message, [](std::string_view name) { return name == "x-delivery-count"; });
  copy.exchange.clear();  // the default exchange: into this queue and no other
  copy.routing_key = queue_;
  publisher().publish(copy);
  browser_.ack(letter.handle);
}

bool RabbitMqDeadLetters::replay(const transport::DeadLetter& letter,
                                 const transport::OutboundMessage& copy) {
  transport::OutboundMessage out = copy;
  restore_expiration(out, letter.message);
  // Without a worker (`dlq --queue` alone): the queue the letter was dead-lettered from.
  const std::string target =
      !worker_queue_.empty()
          ? worker_queue_
          : header_or(letter.message, "x-warren-queue",
                      header_or(letter.message, "x-first-death-queue", std::string()));
  if (to_worker_queue_ && !target.empty()) {
    // Through the default exchange, which every broker has (the delay levels' delivery exchange
    // exists only once a host has run); the consumer shows the handler the original exchange and
    // routing key.
    out.exchange.clear();
    out.routing_key = target;
    transport::set_header(out.headers, "x-warren-original-exchange", letter.original_exchange);
    transport::set_header(out.headers, "x-warren-original-routing-key",
                          letter.original_routing_key);
  }
  publisher().publish(out);
  browser_.ack(letter.handle);
  return true;
}

std::size_t RabbitMqDeadLetters::remove(const std::vector<transport::DeadLetter>& letters) {
  for (const auto& letter : letters)
    browser_.ack(letter.handle);
  return letters.size();
}

}  // namespace warren::broker
