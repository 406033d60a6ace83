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

std::vector<DeadLetter> DeadLetterBrowser::fetch(std::size_t max, std::chrono::milliseconds idle) {
  std::vector<DeadLetter> letters;
  if (max == 0 || message_count_ == 0)
    return letters;
  const std::size_t wanted = std::min<std::uint64_t>(max, message_count_);
  amqp_connection_state_t state = connection_->state();
  if (!consuming_) {
    // The browser holds what it reads unacked, so the broker must be allowed to send all of it
    // (0: no limit, beyond what a prefetch count can say).
    const auto prefetch = static_cast<std::uint16_t>(wanted > 65535 ? 0 : wanted);
    amqp_basic_qos(state, kChannel, 0, prefetch, 0);
    connection_->check(connection_->last_reply(), "basic.qos");
    amqp_basic_consume(state, kChannel, bytes_of(queue_), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    connection_->check(connection_->last_reply(), "consuming '" + queue_ + "'");
    consuming_ = true;
  }
  while (letters.size() < wanted) {
    amqp_maybe_release_buffers(state);
    timeval timeout{static_cast<time_t>(idle.count() / 1000),
                    static_cast<suseconds_t>((idle.count() % 1000) * 1000)};
    amqp_envelope_t envelope{};
    const amqp_rpc_reply_t reply = amqp_consume_message(state, &envelope, &timeout, 0);
    if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        reply.library_error == AMQP_STATUS_TIMEOUT) {
      break;
    }
    if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
      throw ConnectionLost("reading '" + queue_ + "': " + reply_text(reply));
    }
    DeadLetter letter;
    letter.tag = envelope.delivery_tag;
    auto& message = letter.message;
    message.queue = queue_;
    message.exchange = string_of(envelope.exchange);
    message.routing_key = string_of(envelope.routing_key);
    message.redelivered = envelope.redelivered != 0;
    take_properties(message, envelope.message.properties);
    message.body = string_of(envelope.message.body);
    amqp_destroy_envelope(&envelope);
    letters.push_back(std::move(letter));
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
