// bench_fill_queue URI QUEUE COUNT SIZE: publishes COUNT persistent messages of SIZE bytes to
// QUEUE (through the default exchange) with publisher confirms, 1,000 in flight at a time, and
// returns once every one is confirmed.
#include <string>

#include "bench_amqp.h"  // before amqp_framing.h, which needs amqp.h first

#include <amqp_framing.h>

int main(int argc, char** argv) {
  if (argc != 5)
    bench::die("usage: bench_fill_queue URI QUEUE COUNT SIZE");
  const std::string queue = argv[2];
  const long count = std::stol(argv[3]);
  const std::string body(static_cast<std::size_t>(std::stol(argv[4])), 'x');
  amqp_connection_state_t conn = bench::connect(argv[1], 1);
  amqp_confirm_select(conn, 1);
  bench::check(amqp_get_rpc_reply(conn), "confirm.select");

  amqp_basic_properties_t properties{};
  properties._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
  properties.delivery_mode = 2;
  properties.content_type = amqp_cstring_bytes("application/octet-stream");
  constexpr long kWindow = 1000;
  long sent = 0;
  long confirmed = 0;
  while (confirmed < count) {
    while (sent < count && sent - confirmed < kWindow) {
      if (amqp_basic_publish(
              conn, 1, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), 0, 0, &properties,
              amqp_bytes_t{body.size(), const_cast<char*>(body.data())}) != AMQP_STATUS_OK) {
        bench::die("publish failed");
      }
      ++sent;
    }
    amqp_frame_t frame;
    if (amqp_simple_wait_frame(conn, &frame) != AMQP_STATUS_OK)
      bench::die("wait_frame failed");
    if (frame.frame_type != AMQP_FRAME_METHOD)
      continue;
    if (frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
      const auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
      confirmed = ack->multiple ? static_cast<long>(ack->delivery_tag) : confirmed + 1;
    } else if (frame.payload.method.id == AMQP_BASIC_NACK_METHOD) {
      bench::die("the broker nacked a message");
    }
    amqp_maybe_release_buffers(conn);
  }
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return 0;
}
