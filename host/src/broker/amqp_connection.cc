// See amqp_connection.h.
#include "broker/amqp_connection.h"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/tls_error_reason.h"
#include "warren_version.h"

namespace warren::broker {
namespace {

// How long close() waits for close-ok: a peer that does not answer by then is left behind.
constexpr auto kCloseHandshakeTimeout = std::chrono::milliseconds(2000);

timeval to_timeval(std::chrono::milliseconds duration) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(duration.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((duration.count() % 1000) * 1000);
  return tv;
}

// rabbitmq-c's status for a TLS failure, with OpenSSL's reason when it left one: a broker that
// refuses the client certificate shows as "a socket error occurred (tlsv13 alert certificate
// required)" rather than the bare status.
std::string with_tls_reason(std::string status, const BrokerEndpoint& endpoint) {
  if (!endpoint.tls)
    return status;
  if (const std::string reason = take_tls_error_reason(); !reason.empty())
    status += " (" + reason + ")";
  return status;
}

amqp_socket_t* make_socket(amqp_connection_state_t state, const BrokerEndpoint& endpoint,
                           const config::TlsConfig& tls) {
  if (!endpoint.tls)
    return amqp_tcp_socket_new(state);
  amqp_socket_t* socket = amqp_ssl_socket_new(state);
  if (socket == nullptr)
    return nullptr;
  amqp_ssl_socket_set_verify_peer(socket, 1);
  amqp_ssl_socket_set_verify_hostname(socket, 1);
  if (amqp_ssl_socket_set_ssl_versions(socket, AMQP_TLSv1_2, AMQP_TLSvLATEST) != AMQP_STATUS_OK) {
    throw ConnectionLost("cannot require TLS 1.2 or later");
  }
  if (!tls.ca_file.empty() &&
      amqp_ssl_socket_set_cacert(socket, tls.ca_file.c_str()) != AMQP_STATUS_OK) {
    throw ConnectionLost(
        with_tls_reason("cannot load the CA file " + tls.ca_file.string(), endpoint));
  }
  if (!tls.cert_file.empty() && amqp_ssl_socket_set_key(socket, tls.cert_file.c_str(),
                                                        tls.key_file.c_str()) != AMQP_STATUS_OK) {
    throw ConnectionLost(with_tls_reason("cannot load the client certificate " +
                                             tls.cert_file.string() + " and key " +
                                             tls.key_file.string(),
                                         endpoint));
  }
  return socket;
}

}  // namespace

AmqpConnection::AmqpConnection(amqp_connection_state_t state, BrokerEndpoint endpoint)
    : state_(state), endpoint_(std::move(endpoint)) {}

AmqpConnection::~AmqpConnection() {
  // No close handshake here: on a dead peer it could hang. close() is the graceful path.
  amqp_destroy_connection(state_);
}

std::unique_ptr<AmqpConnection> AmqpConnection::open(const BrokerEndpoint& endpoint,
                                                     const ConnectionOptions& options) {
  amqp_connection_state_t state = amqp_new_connection();
  if (state == nullptr)
    throw ConnectionLost("out of memory creating a connection");
  std::unique_ptr<AmqpConnection> connection(new AmqpConnection(state, endpoint));
  const std::string where = endpoint.describe();
  try {
    if (endpoint.tls)
      take_tls_error_reason();  // so that a reason below is this attempt's, never an older one
    amqp_socket_t* socket = make_socket(state, endpoint, options.tls);
    if (socket == nullptr)
      throw ConnectionLost("cannot create a socket");
    timeval connect_timeout = to_timeval(options.connect_timeout);
    const int opened =
        amqp_socket_open_noblock(socket, endpoint.host.c_str(), endpoint.port, &connect_timeout);
    if (opened != AMQP_STATUS_OK)
      throw ConnectionLost(with_tls_reason(status_text(opened), endpoint));
    connection->fd_ = amqp_socket_get_sockfd(socket);
    timeval rpc_timeout = to_timeval(options.connect_timeout);
    amqp_set_handshake_timeout(state, &rpc_timeout);
    amqp_set_rpc_timeout(state, &rpc_timeout);

    AmqpTableBuilder capabilities;
    capabilities.add("consumer_cancel_notify", true)
        .add("connection.blocked", true)
        .add("publisher_confirms", true)
        .add("basic.nack", true)
        .add("authentication_failure_close", true);
    amqp_table_t capabilities_table = capabilities.table();
    amqp_table_entry_t properties[4]{};
    properties[0].key = amqp_cstring_bytes("capabilities");
    properties[0].value.kind = AMQP_FIELD_KIND_TABLE;
    properties[0].value.value.table = capabilities_table;
    properties[1].key = amqp_cstring_bytes("product");
    properties[1].value.kind = AMQP_FIELD_KIND_UTF8;
    properties[1].value.value.bytes = amqp_cstring_bytes("warren");
    properties[2].key = amqp_cstring_bytes("version");
    properties[2].value.kind = AMQP_FIELD_KIND_UTF8;
    properties[2].value.value.bytes = amqp_cstring_bytes(WARREN_VERSION);
    properties[3].key = amqp_cstring_bytes("connection_name");
    properties[3].value.kind = AMQP_FIELD_KIND_UTF8;
    properties[3].value.value.bytes = bytes_of(options.connection_name);
    amqp_table_t client_properties{4, properties};

    const int heartbeat_seconds = static_cast<int>(options.heartbeat.count() / 1000);
    const amqp_rpc_reply_t login =
        amqp_login_with_properties(state, endpoint.vhost.c_str(), 0, AMQP_DEFAULT_FRAME_SIZE,
                                   heartbeat_seconds, &client_properties, AMQP_SASL_METHOD_PLAIN,
                                   endpoint.user.c_str(), endpoint.password.c_str());
    if (login.reply_type != AMQP_RESPONSE_NORMAL)
      throw ConnectionLost(with_tls_reason(reply_text(login), endpoint));
  } catch (const ConnectionLost& e) {
    throw ConnectionLost("cannot connect to " + where + ": " + e.what());
  }
  return connection;
}

void AmqpConnection::close() noexcept {
  if (closed_)
    return;
  closed_ = true;
  timeval short_timeout = to_timeval(kCloseHandshakeTimeout);
  amqp_set_rpc_timeout(state_, &short_timeout);
  amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
}

void AmqpConnection::abort_socket() noexcept {
  const int fd = fd_.load();
  if (fd >= 0)
    ::shutdown(fd, SHUT_RDWR);
}

void AmqpConnection::check(const amqp_rpc_reply_t& reply, const std::string& what) const {
  if (reply.reply_type == AMQP_RESPONSE_NORMAL)
    return;
  throw ConnectionLost(what + ": " + reply_text(reply));
}

}  // namespace warren::broker
