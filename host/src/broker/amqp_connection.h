// One AMQP connection (rabbitmq-c state + socket), owned by exactly one I/O thread. Opening does
// TCP or TLS (peer and hostname verified, TLS 1.2 minimum), login with heartbeats and the
// capabilities Warren relies on (consumer_cancel_notify, connection.blocked, publisher
// confirms). Destroying it never blocks on a dead peer: a graceful close() is explicit.
#pragma once

#include <amqp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "broker/broker_endpoint.h"
#include "config/config.h"

namespace warren::broker {

struct ConnectionOptions {
  std::chrono::milliseconds heartbeat{30000};
  std::chrono::milliseconds connect_timeout{10000};
  config::TlsConfig tls;
  std::string connection_name;  // shown in the management UI
};

class AmqpConnection {
 public:
  // Throws ConnectionLost (unreachable, TLS or login failure) with the endpoint and the reason.
  static std::unique_ptr<AmqpConnection> open(const BrokerEndpoint& endpoint,
                                              const ConnectionOptions& options);
  ~AmqpConnection();
  AmqpConnection(const AmqpConnection&) = delete;
  AmqpConnection& operator=(const AmqpConnection&) = delete;

  amqp_connection_state_t state() const noexcept { return state_; }
  int fd() const noexcept { return fd_; }
  const BrokerEndpoint& endpoint() const noexcept { return endpoint_; }

  // connection.close with a short deadline; afterwards the connection is unusable.
  void close() noexcept;
  // Unblocks a thread stuck in a socket call on this connection (the publish watchdog). Safe
  // from any thread.
  void abort_socket() noexcept;

  // Throws ConnectionLost naming `what` when `reply` is not normal.
  void check(const amqp_rpc_reply_t& reply, const std::string& what) const;
  // The reply of the last synchronous method (after amqp_queue_declare & co).
  amqp_rpc_reply_t last_reply() const { return amqp_get_rpc_reply(state_); }

 private:
  AmqpConnection(amqp_connection_state_t state, BrokerEndpoint endpoint);

  amqp_connection_state_t state_;
  BrokerEndpoint endpoint_;
  std::atomic<int> fd_{-1};
  bool closed_ = false;
};

}  // namespace warren::broker
