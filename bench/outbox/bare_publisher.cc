// bench_outbox_bare_publisher URI EXCHANGE ROUTING_KEY N BATCH SIZE: the baseline of the outbox
// throughput benchmark. The textbook rabbitmq-c publisher with confirms: publish BATCH persistent,
// mandatory messages (a message_id and one header each, like an outbox row), then read frames
// until every one of them is confirmed (basic.ack, possibly `multiple`), and again, N in all.
// Prints "first_ns last_ns": first publish to last confirm, wall clock.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_amqp.h"  // before amqp_framing.h, which needs amqp.h first

#include <amqp_framing.h>

using bench::check;
using bench::die;
using bench::now_ns;

int main(int argc, char** argv) {
  if (argc != 7)
    die("usage: URI EXCHANGE ROUTING_KEY N BATCH SIZE");
  std::string uri = argv[1];
  const std::string exchange = argv[2];
  const std::string routing_key = argv[3];
  const long total = std::atol(argv[4]);
  const long batch = std::atol(argv[5]);
  const std::string body(static_cast<std::size_t>(std::atol(argv[6])), 'x');

  amqp_connection_state_t conn = bench::connect(uri, 1);
  amqp_confirm_select(conn, 1);
  check(amqp_get_rpc_reply(conn), "confirm.select");

  amqp_table_entry_t header{};
  header.key = amqp_cstring_bytes("x-origin");
  header.value.kind = AMQP_FIELD_KIND_UTF8;
  header.value.value.bytes = amqp_cstring_bytes("bench");

  std::uint64_t sequence = 0;
  std::uint64_t confirmed = 0;
  const std::int64_t first = now_ns();
  for (long sent = 0; sent < total;) {
    const long this_batch = std::min(batch, total - sent);
    for (long i = 0; i < this_batch; ++i, ++sent) {
      const std::string message_id = "bare-" + std::to_string(sent);
      amqp_basic_properties_t properties{};
      properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                          AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
      properties.content_type = amqp_cstring_bytes("application/json");
      properties.delivery_mode = 2;
      properties.message_id = amqp_cstring_bytes(message_id.c_str());
      properties.headers.num_entries = 1;
      properties.headers.entries = &header;
      if (amqp_basic_publish(conn, 1, amqp_cstring_bytes(exchange.c_str()),
                             amqp_cstring_bytes(routing_key.c_str()), 1, 0, &properties,
                             amqp_bytes_t{body.size(), const_cast<char*>(body.data())}) !=
          AMQP_STATUS_OK) {
        die("publish failed");
      }
      ++sequence;
    }
    while (confirmed < sequence) {
      amqp_frame_t frame;
      amqp_maybe_release_buffers(conn);
      if (amqp_simple_wait_frame(conn, &frame) != AMQP_STATUS_OK)
        die("waiting for confirms failed");
      if (frame.frame_type != AMQP_FRAME_METHOD)
        continue;
      if (frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
        const auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
        confirmed = ack->multiple ? ack->delivery_tag : confirmed + 1;
      } else if (frame.payload.method.id == AMQP_BASIC_NACK_METHOD) {
        die("a publish was nacked");
      } else if (frame.payload.method.id == AMQP_BASIC_RETURN_METHOD) {
        die("a publish was returned: bind a queue to the exchange first");
      }
    }
  }
  const std::int64_t last = now_ns();
  std::printf("%lld %lld\n", static_cast<long long>(first), static_cast<long long>(last));
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return 0;
}
