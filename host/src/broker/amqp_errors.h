// Turning rabbitmq-c's status codes and RPC replies into sentences, and RabbitMQ's
// PRECONDITION_FAILED texts into advice naming the queue, the argument and both values.
#pragma once

#include <amqp.h>

#include <string>
#include <string_view>

#include "transport/transport.h"

namespace warren::broker {

// The connection or a channel failed: reconnect.
class ConnectionLost : public transport::TransportError {
 public:
  using transport::TransportError::TransportError;
};

// The broker refused a declaration (a conflict, a missing queue, no permission): do not retry.
class TopologyError : public transport::TransportError {
 public:
  using transport::TransportError::TransportError;
};

std::string status_text(int status);

// "" when the reply is normal; else what went wrong, with the server's reply code and text.
std::string reply_text(const amqp_rpc_reply_t& reply);

// True when the server closed the channel or connection (a reply with a server exception).
bool is_server_exception(const amqp_rpc_reply_t& reply) noexcept;
// The AMQP reply code of a server exception (404 NOT_FOUND, 406 PRECONDITION_FAILED...), or 0.
int server_reply_code(const amqp_rpc_reply_t& reply) noexcept;

// "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': received
// 'classic' but current is 'quorum'" -> "queue 'q' already exists with x-queue-type = 'quorum',
// but the config asks for 'classic'; ...". Other texts are returned as they are.
std::string explain_precondition_failed(std::string_view server_text);

// Why the broker closed a consumer's channel, with advice where the cause is a configuration
// mistake: "PRECONDITION_FAILED - delivery acknowledgement on channel 2 timed out ..." means a
// handler held a delivery longer than the broker's consumer_timeout. Other texts come back as
// they are.
std::string explain_channel_close(std::string_view server_text);

}  // namespace warren::broker
