// See delivery_assembler.h.
#include "broker/delivery_assembler.h"

#include <amqp_framing.h>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/inbound_delivery.h"

namespace warren::broker {

void DeliveryAssembler::on_deliver(std::size_t index, const amqp_basic_deliver_t& deliver,
                                   const std::string& queue) {
  std::optional<Pending>& slot = pending_.at(index);
  if (slot) {
    throw ConnectionLost("a delivery began on channel index " + std::to_string(index) +
                         " before the last one's content had arrived");
  }
  slot.emplace();
  slot->delivery.delivery_tag = deliver.delivery_tag;
  transport::InboundMessage& inbound = slot->delivery.message;
  inbound.queue = queue;
  inbound.exchange = string_of(deliver.exchange);
  inbound.routing_key = string_of(deliver.routing_key);
  inbound.redelivered = deliver.redelivered != 0;
}

std::optional<DeliveryAssembler::Assembled> DeliveryAssembler::on_content(
    std::size_t index, const amqp_frame_t& frame) {
  std::optional<Pending>& slot = pending_.at(index);
  if (!slot) {
    throw ConnectionLost("a content frame on channel " + std::to_string(frame.channel) +
                         " that no basic.deliver began");
  }
  transport::InboundMessage& inbound = slot->delivery.message;
  if (frame.frame_type == AMQP_FRAME_HEADER) {
    if (slot->header_read)
      throw ConnectionLost("a second header frame in one delivery on channel " +
                           std::to_string(frame.channel));
    slot->header_read = true;
    take_properties(inbound,
                    *static_cast<const amqp_basic_properties_t*>(frame.payload.properties.decoded));
    slot->body_size = frame.payload.properties.body_size;
    if (slot->body_size > inbound.body.max_size())
      throw ConnectionLost("a delivery of " + std::to_string(slot->body_size) + " bytes");
    inbound.body.reserve(static_cast<std::size_t>(slot->body_size));
  } else if (frame.frame_type == AMQP_FRAME_BODY) {
    const amqp_bytes_t& fragment = frame.payload.body_fragment;
    if (!slot->header_read || inbound.body.size() + fragment.len > slot->body_size) {
      throw ConnectionLost("body frames on channel " + std::to_string(frame.channel) +
                           " that do not match the delivery's header");
    }
    inbound.body.append(static_cast<const char*>(fragment.bytes), fragment.len);
  } else {
    return std::nullopt;
  }
  if (slot->header_read && inbound.body.size() == slot->body_size)
    return finish(index);
  return std::nullopt;
}

void DeliveryAssembler::drop_all() {
  for (auto& slot : pending_)
    slot.reset();
}

DeliveryAssembler::Assembled DeliveryAssembler::finish(std::size_t index) {
  Assembled done = std::move(pending_[index]->delivery);
  pending_[index].reset();
  done.message.attempt = attempt_of(done.message.headers);
  show_original_route(done.message);
  return done;
}

}  // namespace warren::broker
