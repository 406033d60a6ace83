// See dead_letter_browser.h.
#include "broker/dead_letter_browser.h"

#include <amqp_framing.h>

#include <thread>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/inbound_delivery.h"
#include "broker/rabbitmq_transport.h"
#include "broker/topology.h"

namespace warren::broker {
namespace {

constexpr amqp_channel_t kChannel = 1;
constexpr auto kCloseGrace = std::chrono::milliseconds(150);

}  // namespace

DeadLetterBrowser::DeadLetterBrowser(const config::Config& config, std::string queue)
    : queue_(std::move(queue)) {
  std::string last_error;
  for (const auto& endpoint : resolve_endpoints(config.broker)) {
    try {
      connection_ = AmqpConnection::open(
          endpoint, connection_options(config.broker, "dlq", config.host.name));
      break;
    } catch (const ConnectionLost& e) {
      last_error = e.what();
    }
  }
  if (!connection_)
    throw ConnectionLost(last_error);
  amqp_channel_open(connection_->state(), kChannel);
  connection_->check(connection_->last_reply(), "opening a channel");
  amqp_queue_declare_ok_t* ok = amqp_queue_declare(connection_->state(), kChannel, bytes_of(queue_),
                                                   1, 0, 0, 0, amqp_empty_table);
  const auto reply = connection_->last_reply();
  if (ok == nullptr || reply.reply_type != AMQP_RESPONSE_NORMAL) {
    if (server_reply_code(reply) == AMQP_NOT_FOUND) {
      throw TopologyError("dead-letter queue '" + queue_ + "' does not exist");
    }
    throw_declare_error(reply, "opening dead-letter queue '" + queue_ + "'");
  }
  message_count_ = ok->message_count;
}

DeadLetterBrowser::~DeadLetterBrowser() {
  if (!connection_)
    return;
  if (acked_any_) {
    // RabbitMQ 3.10 quorum queues can drop acks still in flight at channel.close
    // (rabbitmq-server issue 10327): a synchronous round trip, then a pause, before closing.
    amqp_basic_qos(connection_->state(), kChannel, 0, 0, 0);
    std::this_thread::sleep_for(kCloseGrace);
  }
  // Closing the channel hands every unacked message back to the queue.
  amqp_channel_close(connection_->state(), kChannel, AMQP_REPLY_SUCCESS);
  connection_->close();
}

std::optional<DeadLetter> DeadLetterBrowser::next() {
  if (read_ >= message_count_)
    return std::nullopt;
  amqp_connection_state_t state = connection_->state();
  amqp_maybe_release_buffers(state);
  const amqp_rpc_reply_t reply = amqp_basic_get(state, kChannel, bytes_of(queue_), 0);
  connection_->check(reply, "reading '" + queue_ + "'");
  if (reply.reply.id != AMQP_BASIC_GET_OK_METHOD)
    return std::nullopt;  // basic.get-empty: fewer than counted (someone else took some)
  const auto* ok = static_cast<const amqp_basic_get_ok_t*>(reply.reply.decoded);
  DeadLetter letter;
  letter.tag = ok->delivery_tag;
  auto& message = letter.message;
  message.queue = queue_;
  message.exchange = string_of(ok->exchange);
  message.routing_key = string_of(ok->routing_key);
  message.redelivered = ok->redelivered != 0;
  amqp_message_t content{};
  const amqp_rpc_reply_t read = amqp_read_message(state, kChannel, &content, 0);
  if (read.reply_type != AMQP_RESPONSE_NORMAL) {
    throw ConnectionLost("reading '" + queue_ + "': " + reply_text(read));
  }
  take_properties(message, content.properties);
  message.body = string_of(content.body);
  amqp_destroy_message(&content);
  ++read_;
  return letter;
}

std::vector<DeadLetter> DeadLetterBrowser::fetch(std::size_t max) {
  std::vector<DeadLetter> letters;
  while (letters.size() < max) {
    auto letter = next();
    if (!letter)
      break;
    letters.push_back(std::move(*letter));
  }
  return letters;
}

void DeadLetterBrowser::ack(std::uint64_t tag) {
  acked_any_ = true;
  const int status = amqp_basic_ack(connection_->state(), kChannel, tag, 0);
  if (status != AMQP_STATUS_OK)
    throw ConnectionLost("acking a dead letter: " + status_text(status));
}

std::uint64_t DeadLetterBrowser::purge_all() {
  amqp_queue_purge_ok_t* ok = amqp_queue_purge(connection_->state(), kChannel, bytes_of(queue_));
  connection_->check(connection_->last_reply(), "purging '" + queue_ + "'");
  return ok == nullptr ? 0 : ok->message_count;
}

}  // namespace warren::broker
