// DeliveryAssembler: a basic.deliver put together from its frames as they arrive.
//
// A delivery is three kinds of frames on its channel: the basic.deliver method, a header frame
// (the properties and the body's size), then body frames until that size is reached; frames of
// other channels may come in between. The assembler keeps one delivery in progress per channel
// and copies what it needs out of each frame at once (a frame's memory is the library's, recycled
// once the socket buffer is drained). So the I/O loop never blocks waiting for the rest of one
// delivery, and a message costs its own strings and nothing more: amqp_read_message, which this
// replaces, cloned the properties into a fresh 4 KiB zeroed pool and the body into a buffer of its
// own for every message, only for both to be copied again (a third of the consumer I/O thread's
// instructions, issue 17).
#pragma once

#include <amqp.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "transport/message.h"

namespace warren::broker {

class DeliveryAssembler {
 public:
  struct Assembled {
    std::uint64_t delivery_tag = 0;
    transport::InboundMessage message;
  };

  explicit DeliveryAssembler(std::size_t channels = 0) : pending_(channels) {}

  // A basic.deliver on channel `index`, of the config's queue `queue`. Throws ConnectionLost if
  // that channel's previous delivery is still missing frames.
  void on_deliver(std::size_t index, const amqp_basic_deliver_t& deliver, const std::string& queue);
  // A header or body frame on channel `index`: the delivery when this frame completed it. Throws
  // ConnectionLost on a frame out of order (no delivery begun, a second header, a body frame before
  // the header, or more body than the header announced).
  std::optional<Assembled> on_content(std::size_t index, const amqp_frame_t& frame);

  // The channel closed, or the connection went: deliveries in progress are gone with it.
  void drop(std::size_t index) { pending_.at(index).reset(); }
  void drop_all();

 private:
  struct Pending {
    Assembled delivery;
    std::uint64_t body_size = 0;
    bool header_read = false;
  };
  Assembled finish(std::size_t index);

  std::vector<std::optional<Pending>> pending_;  // by channel index
};

}  // namespace warren::broker
