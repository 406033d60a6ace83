// The transport conformance suite (conformance/transport_conformance.h) on the RabbitMQ transport,
// against the test broker that scripts/test starts (WARREN_TEST_AMQP_URI, WARREN_TEST_RABBITMQCTL).
// Labelled `integration`: without the broker it skips, or fails under WARREN_REQUIRE_SERVICES=1.
//
// The backend inspects the broker on a connection of its own (rabbitmq-c): ready counts by a
// passive queue.declare, cleanup by queue.delete and exchange.delete. A lost connection is the
// broker closing this test's connections (named after its unique host name) with rabbitmqctl.
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "broker/rabbitmq_transport.h"
#include "conformance/transport_conformance.h"
#include "transport/ids.h"

namespace warren::transport::testing {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

amqp_bytes_t bytes_of(const std::string& text) {
  return amqp_bytes_t{text.size(), const_cast<char*>(text.data())};
}

// A plain connection to the test broker for looking at and removing what a test made.
class BrokerProbe {
 public:
  explicit BrokerProbe(const std::string& uri) {
    std::string copy = uri;
    amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(copy.data(), &info) != AMQP_STATUS_OK)
      throw std::runtime_error("cannot parse " + uri);
    state_ = amqp_new_connection();
    amqp_socket_t* socket = amqp_tcp_socket_new(state_);
    if (socket == nullptr || amqp_socket_open(socket, info.host, info.port) != AMQP_STATUS_OK)
      throw std::runtime_error("cannot connect to " + uri);
    // "amqp://host/" names the vhost "" by the URI spec; the test broker has only "/".
    const char* vhost = info.vhost == nullptr || *info.vhost == '\0' ? "/" : info.vhost;
    expect_normal(
        amqp_login(state_, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user, info.password),
        "login");
    open_channel();
  }
  ~BrokerProbe() {
    amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(state_);
  }
  BrokerProbe(const BrokerProbe&) = delete;
  BrokerProbe& operator=(const BrokerProbe&) = delete;

  std::size_t ready_count(const std::string& queue) {
    amqp_queue_declare_ok_t* ok =
        amqp_queue_declare(state_, channel_, bytes_of(queue), 1, 0, 0, 0, amqp_empty_table);
    expect_normal(amqp_get_rpc_reply(state_), "passive declare of " + queue);
    return ok->message_count;
  }

  // Best effort: a failure closes the channel, so each step gets a fresh one.
  void remove_queue(const std::string& queue) {
    amqp_queue_delete(state_, channel_, bytes_of(queue), 0, 0);
    reopen_if_closed();
  }
  void remove_exchange(const std::string& exchange) {
    amqp_exchange_delete(state_, channel_, bytes_of(exchange), 0);
    reopen_if_closed();
  }

 private:
  void open_channel() {
    ++channel_;
    amqp_channel_open(state_, channel_);
    expect_normal(amqp_get_rpc_reply(state_), "channel.open");
  }
  void reopen_if_closed() {
    if (amqp_get_rpc_reply(state_).reply_type != AMQP_RESPONSE_NORMAL)
      open_channel();
  }
  static void expect_normal(const amqp_rpc_reply_t& reply, const std::string& what) {
    if (reply.reply_type != AMQP_RESPONSE_NORMAL)
      throw std::runtime_error("test broker: " + what + " failed");
  }

  amqp_connection_state_t state_ = nullptr;
  amqp_channel_t channel_ = 0;
};

// Runs a shell command; returns its standard output.
std::string run(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    throw std::runtime_error("cannot run " + command);
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe))
    output.append(buffer.data(), n);
  if (pclose(pipe) != 0)
    throw std::runtime_error("failed: " + command + "\n" + output);
  return output;
}

class RabbitMqBackend final : public ConformanceBackend {
 public:
  RabbitMqBackend()
      : uri_(env("WARREN_TEST_AMQP_URI")), rabbitmqctl_(env("WARREN_TEST_RABBITMQCTL")) {
    if (!uri_.empty() && !rabbitmqctl_.empty())
      probe_ = std::make_unique<BrokerProbe>(uri_);
  }

  std::string unavailable() const override {
    return probe_ ? std::string()
                  : "no test broker: WARREN_TEST_AMQP_URI and WARREN_TEST_RABBITMQCTL are not set "
                    "(scripts/services/rabbitmq.sh start)";
  }
  std::string unique_name(std::string_view base) override {
    return std::string(base) + "." + random_hex(6);
  }
  void prepare(config::Config& config) override {
    using namespace std::chrono_literals;
    host_name_ = config.host.name;
    config.broker.uris = {uri_};
    config.broker.reconnect_initial = 50ms;
    config.broker.reconnect_max = 200ms;
    config.broker.publish_timeout = 10s;
  }
  std::unique_ptr<Transport> open(const config::Config& config) override {
    return std::make_unique<broker::RabbitMqTransport>(config, nullptr, nullptr);
  }
  std::size_t ready_count(const std::string& queue) override { return probe_->ready_count(queue); }
  void lose_connection() override {
    // The transport names its connections "warren consumer (HOST)" and "warren publisher (HOST)".
    const std::string pids =
        run(rabbitmqctl_ +
            " list_connections --quiet --no-table-headers pid client_properties | "
            "grep -F '(" +
            host_name_ + ")' | cut -f1");
    std::size_t closed = 0;
    std::size_t start = 0;
    while (start < pids.size()) {
      const std::size_t end = pids.find('\n', start);
      const std::string pid = pids.substr(start, end - start);
      if (!pid.empty()) {
        run(rabbitmqctl_ + " close_connection '" + pid + "' 'conformance: lost connection'");
        ++closed;
      }
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
    ASSERT_GE(closed, 1u) << "no connection of host " << host_name_ << " on the broker";
  }
  void cleanup(const config::Config& config) override {
    if (!probe_)
      return;
    for (const auto& queue : config.queues)
      probe_->remove_queue(queue.name);
    for (const auto& exchange : config.exchanges)
      probe_->remove_exchange(exchange.name);
  }

 private:
  const std::string uri_;
  const std::string rabbitmqctl_;
  std::unique_ptr<BrokerProbe> probe_;
  std::string host_name_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(RabbitMq, TransportConformance, RabbitMqBackend);

}  // namespace
}  // namespace warren::transport::testing
