// Template part of io_wait.h.
#pragma once

#include <amqp.h>

#include "broker/amqp_errors.h"

namespace warren::broker {

template <class OnFrame>
void read_available_frames(AmqpConnection& connection, PassEnd end, OnFrame&& on_frame) {
  amqp_connection_state_t state = connection.state();
  bool read_a_frame = false;
  for (;;) {
    if (read_a_frame && end == PassEnd::buffer_empty && !amqp_frames_enqueued(state) &&
        !amqp_data_in_buffer(state)) {
      break;
    }
    timeval immediately{0, 0};
    amqp_frame_t frame{};
    const int status = amqp_simple_wait_frame_noblock(state, &frame, &immediately);
    if (status == AMQP_STATUS_TIMEOUT)
      break;
    if (status != AMQP_STATUS_OK) {
      throw ConnectionLost("connection to " + connection.endpoint().describe() +
                           " lost: " + status_text(status));
    }
    on_frame(frame);
    // A frame's memory is its channel's pool, which rabbitmq-c only recycles when asked. Asked
    // after every frame, a channel reuses the same few hundred bytes; asked once per pass, a pass
    // of a full prefetch streamed through four 128 KiB pool pages, 0.5 MB of a host's resident
    // memory (issue 17). Nothing outlives on_frame: every handler copies what it keeps.
    amqp_maybe_release_buffers_on_channel(state, frame.channel);
    read_a_frame = true;
  }
  if (!amqp_frames_enqueued(state) && !amqp_data_in_buffer(state)) {
    amqp_maybe_release_buffers(state);
  }
}

}  // namespace warren::broker
