// See publisher_connection.h. This file: the publishing connection's two channels and the frames
// they receive. The confirm channel (kPublishChannel) carries the publishes and their confirms
// and returns; when the broker closes it, it alone is reopened (channel.open, confirm.select)
// while the connection stays. The check channel (kExchangeCheckChannel) carries the passive
// exchange.declare that tells whether an exchange exists before the first publish to it; a
// missing exchange closes that channel only, and it is opened again for the next check.
//
// Why check first rather than only recover: once the broker closes a channel over a bad publish,
// it sends no more confirms on it, so the publishes sent before the bad one are in doubt (they
// may have been routed, and a retry would duplicate them). The only way to leave them certain is
// to keep the bad publish off that channel. The check costs one round trip per exchange and
// connection; recovery stays for the race where an exchange is deleted after its check.
#include "broker/publisher_connection.h"  // first: it includes <amqp.h> before <amqp_framing.h>

#include <amqp_framing.h>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/channel_numbers.h"
#include "observability/log.h"

namespace warren::broker {

void PublisherConnection::send_method(ChannelNumber channel, amqp_method_number_t method,
                                      void* decoded, const char* what) {
  const int status =
      guarded([&] { return amqp_send_method(connection()->state(), channel, method, decoded); });
  if (status != AMQP_STATUS_OK)
    throw ConnectionLost(std::string(what) + ": " + status_text(status));
}

void PublisherConnection::acknowledge_channel_close(ChannelNumber channel) {
  amqp_channel_close_ok_t ok{};
  send_method(channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok, "acknowledging a channel close");
}

// --- Frames ---

void PublisherConnection::on_frame(const amqp_frame_t& frame) {
  if (frame.frame_type != AMQP_FRAME_METHOD)
    return;
  switch (frame.channel) {
    case 0:
      if (frame.payload.method.id == AMQP_CONNECTION_BLOCKED_METHOD)
        set_blocked(true);
      else if (frame.payload.method.id == AMQP_CONNECTION_UNBLOCKED_METHOD)
        set_blocked(false);
      return;
    case kPublishChannel:
      on_confirm_channel_frame(frame);
      return;
    case kExchangeCheckChannel:
      on_check_channel_frame(frame.payload.method);
      return;
    default:
      return;
  }
}

void PublisherConnection::on_confirm_channel_frame(const amqp_frame_t& frame) {
  const amqp_method_t& method = frame.payload.method;
  switch (method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      // Nothing of a closed channel's is confirmed: the broker sends nothing after its close.
      if (confirm_channel_ != ChannelState::open)
        return;
      const auto* ack = static_cast<const amqp_basic_ack_t*>(method.decoded);
      reset_backoff();  // the broker confirms: this connection works
      finish(confirms_.acked(ack->delivery_tag, ack->multiple != 0));
      return;
    }
    case AMQP_BASIC_NACK_METHOD: {
      if (confirm_channel_ != ChannelState::open)
        return;
      const auto* nack = static_cast<const amqp_basic_nack_t*>(method.decoded);
      finish(confirms_.nacked(nack->delivery_tag, nack->multiple != 0));
      return;
    }
    case AMQP_BASIC_RETURN_METHOD:
      on_returned(frame);
      return;
    case AMQP_CHANNEL_OPEN_OK_METHOD:
      if (confirm_channel_ == ChannelState::opening) {
        amqp_confirm_select_t select{};
        send_method(kPublishChannel, AMQP_CONFIRM_SELECT_METHOD, &select,
                    "enabling publisher confirms on the reopened channel");
        confirm_channel_ = ChannelState::selecting;
      }
      return;
    case AMQP_CONFIRM_SELECT_OK_METHOD:
      if (confirm_channel_ == ChannelState::selecting) {
        confirm_channel_ = ChannelState::open;
        observability::log_info("publisher: publishing channel reopened");
      }
      return;
    default:
      return;
  }
}

void PublisherConnection::on_returned(const amqp_frame_t& frame) {
  const auto* returned = static_cast<const amqp_basic_return_t*>(frame.payload.method.decoded);
  const std::string exchange = string_of(returned->exchange);
  const std::string routing_key = string_of(returned->routing_key);
  std::string text = std::to_string(returned->reply_code) + " " + string_of(returned->reply_text) +
                     " (exchange '" + exchange + "', routing key '" + routing_key + "')";
  amqp_message_t message{};
  const amqp_rpc_reply_t read =
      amqp_read_message(connection()->state(), frame.channel, &message, 0);
  if (read.reply_type != AMQP_RESPONSE_NORMAL)
    throw ConnectionLost("reading a returned message: " + reply_text(read));
  const std::string message_id = (message.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
                                     ? string_of(message.properties.message_id)
                                     : std::string();
  amqp_destroy_message(&message);
  confirms_.returned(message_id, exchange, routing_key, std::move(text));
}

void PublisherConnection::on_channel_closed(ChannelNumber channel, int reply_code,
                                            const std::string& reply_text) {
  if (channel == kPublishChannel) {
    on_confirm_channel_closed(reply_code, reply_text);
    return;
  }
  if (channel == kExchangeCheckChannel) {
    acknowledge_channel_close(channel);
    check_channel_ = ChannelState::closed;
    on_check_refused(reply_code, reply_text);
    check_next_exchange();
    return;
  }
  throw ConnectionLost("the broker closed channel " + std::to_string(channel) +
                       " of the publishing connection: " + reply_text);
}

// The broker refused a publish on the confirm channel (its exchange deleted after the check, a
// write it does not permit) and closed the channel. See ConfirmTracker::channel_closed for what
// can be known of the publishes on it; the rest go out again on the reopened channel.
void PublisherConnection::on_confirm_channel_closed(int /*reply_code*/,
                                                    const std::string& reply_text) {
  acknowledge_channel_close(kPublishChannel);
  if (confirm_channel_ != ChannelState::open) {
    // Closed again before it was back: not one publish's doing. A new connection, with backoff.
    throw ConnectionLost("the broker closed the publishing channel while it was being reopened: " +
                         reply_text);
  }
  const auto culprit = exchange_named_in(reply_text);
  if (culprit)
    exchanges_.forget(*culprit);  // checked again before the next publish to it
  auto loss =
      confirms_.channel_closed(culprit, ": " + reply_text,
                               ": the broker closed the publishing channel (" + reply_text +
                                   ") before confirming it: it may or may not have been published");
  std::size_t in_doubt = 0;
  for (const auto& verdict : loss.verdicts)
    in_doubt += verdict.result == PendingPublish::Result::unavailable ? 1 : 0;
  observability::log_warn(
      "publisher: the broker closed the publishing channel: " + reply_text + "; " +
      std::to_string(in_doubt) + " unconfirmed publish(es) before it are in doubt, " +
      std::to_string(loss.unsent.size()) +
      " it never read are sent again; reopening the channel (the connection stays)");
  finish(std::move(loss.verdicts));
  send_again(std::move(loss.unsent));
  amqp_channel_open_t open{};
  send_method(kPublishChannel, AMQP_CHANNEL_OPEN_METHOD, &open, "reopening the publishing channel");
  confirm_channel_ = ChannelState::opening;
}

// --- Exchange checks ---

void PublisherConnection::on_check_channel_frame(const amqp_method_t& method) {
  switch (method.id) {
    case AMQP_CHANNEL_OPEN_OK_METHOD:
      if (check_channel_ == ChannelState::opening)
        check_channel_ = ChannelState::open;
      check_next_exchange();
      return;
    case AMQP_EXCHANGE_DECLARE_OK_METHOD:
      send_again(exchanges_.found());
      check_next_exchange();
      return;
    default:
      return;
  }
}

void PublisherConnection::on_check_refused(int reply_code, const std::string& reply_text) {
  if (!exchanges_.checking())
    return;
  if (reply_code == AMQP_NOT_FOUND) {
    for (const auto& pending : exchanges_.missing())
      finish(pending, PendingPublish::Result::nacked, ": " + reply_text);
    return;
  }
  // Any other refusal says nothing about the exchange: publish, and let the broker answer that.
  observability::log_warn("publisher: checking exchange '" + *exchanges_.checking() +
                          "' was refused (" + reply_text + "); publishing to it unchecked");
  send_again(exchanges_.found());
}

// Sends the next check when none is running, opening the check channel first when it is closed
// (the broker closes it with every missing exchange). One check at a time: the broker discards
// whatever follows a refused method on its channel.
void PublisherConnection::check_next_exchange() {
  if (!exchanges_.check_due() || connection() == nullptr)
    return;
  if (check_channel_ == ChannelState::closed) {
    amqp_channel_open_t open{};
    send_method(kExchangeCheckChannel, AMQP_CHANNEL_OPEN_METHOD, &open,
                "opening the exchange check channel");
    check_channel_ = ChannelState::opening;
    return;
  }
  if (check_channel_ != ChannelState::open)
    return;
  const auto exchange = exchanges_.start_next();
  if (!exchange)
    return;
  amqp_exchange_declare_t declare{};
  declare.exchange = bytes_of(*exchange);
  declare.type = amqp_empty_bytes;
  declare.passive = 1;
  declare.arguments = amqp_empty_table;
  send_method(kExchangeCheckChannel, AMQP_EXCHANGE_DECLARE_METHOD, &declare,
              "checking that an exchange exists");
}

}  // namespace warren::broker
