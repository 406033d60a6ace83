// The little rabbitmq-c plumbing the benchmark programs share: connect from an amqp:// URI and
// die loudly on any error (a benchmark that half-works measures nothing).
#pragma once

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "process_clock.h"  // bench::now_ns

namespace bench {

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(1);
}

inline void check(amqp_rpc_reply_t reply, const char* what) {
  if (reply.reply_type != AMQP_RESPONSE_NORMAL)
    die(std::string(what) + " failed");
}

inline amqp_connection_state_t connect(const std::string& uri, int channel) {
  std::string copy = uri;
  amqp_connection_info info{};
  if (amqp_parse_url(copy.data(), &info) != AMQP_STATUS_OK)
    die("bad uri " + uri);
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  if (amqp_socket_open(socket, info.host, info.port) != AMQP_STATUS_OK)
    die("cannot connect");
  check(amqp_login(conn, info.vhost && *info.vhost ? info.vhost : "/", 0, 131072, 30,
                   AMQP_SASL_METHOD_PLAIN, info.user, info.password),
        "login");
  amqp_channel_open(conn, channel);
  check(amqp_get_rpc_reply(conn), "channel.open");
  return conn;
}

}  // namespace bench
