// bench_baseline_consumer URI QUEUE COUNT PREFETCH: the baseline Warren is measured against. The
// textbook rabbitmq-c consumer: basic.qos(PREFETCH), manual acks, amqp_consume_message in a
// loop, one basic.ack per message. Prints "first_ns last_ns cpu_ns maxrss_kb" (delivery of the
// first message, ack of the last, the process's CPU time between the two and its peak RSS), as the
// timing plugin does on Warren's side.
#include <cstdio>
#include <string>

#include "bench_amqp.h"
#include "process_clock.h"

int main(int argc, char** argv) {
  if (argc != 5)
    bench::die("usage: bench_baseline_consumer URI QUEUE COUNT PREFETCH");
  const std::string queue = argv[2];
  const long count = std::stol(argv[3]);
  const auto prefetch = static_cast<uint16_t>(std::stoi(argv[4]));
  amqp_connection_state_t conn = bench::connect(argv[1], 1);
  amqp_basic_qos(conn, 1, 0, prefetch, 0);
  bench::check(amqp_get_rpc_reply(conn), "basic.qos");
  amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue.c_str()), amqp_empty_bytes, 0, 0, 0,
                     amqp_empty_table);
  bench::check(amqp_get_rpc_reply(conn), "basic.consume");

  std::int64_t first_ns = 0;
  std::int64_t first_cpu = 0;
  long consumed = 0;
  while (consumed < count) {
    amqp_maybe_release_buffers(conn);
    amqp_envelope_t envelope;
    const amqp_rpc_reply_t reply = amqp_consume_message(conn, &envelope, nullptr, 0);
    if (reply.reply_type != AMQP_RESPONSE_NORMAL)
      bench::die("consume failed");
    if (first_ns == 0) {
      first_cpu = bench::cpu_ns();
      first_ns = bench::now_ns();
    }
    if (amqp_basic_ack(conn, 1, envelope.delivery_tag, 0) != AMQP_STATUS_OK)
      bench::die("ack");
    amqp_destroy_envelope(&envelope);
    ++consumed;
  }
  const std::int64_t last_ns = bench::now_ns();
  const std::int64_t last_cpu = bench::cpu_ns();
  std::printf("%lld %lld %lld %ld\n", static_cast<long long>(first_ns),
              static_cast<long long>(last_ns), static_cast<long long>(last_cpu - first_cpu),
              bench::max_rss_kb());
  // Let the last acks land before closing (rabbitmq-server issue 10327).
  amqp_basic_qos(conn, 1, 0, prefetch, 0);
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
  return 0;
}
