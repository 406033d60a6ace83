// A TCP proxy in front of the test broker that can stop reading what its client sends, as a
// broker that blocked the connection (memory alarm) or a half-open peer would: the client's
// socket calls then hang once the buffers are full. For the publisher's tests of a publish stuck
// in the socket (issue 19, defect 4). One client at a time; cut() closes both sides.
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include "broker/broker_endpoint.h"
#include "loopback_listener.h"

namespace warren::broker::test_support {

class FreezingProxy {
 public:
  explicit FreezingProxy(BrokerEndpoint target) : target_(std::move(target)) {
    const LoopbackListener listener = listen_on_loopback(4);
    listener_ = listener.fd;
    port_ = listener.port;
    thread_ = std::thread([this] { run(); });
  }
  ~FreezingProxy() {
    stopping_ = true;
    thread_.join();
    ::close(listener_);
  }
  FreezingProxy(const FreezingProxy&) = delete;
  FreezingProxy& operator=(const FreezingProxy&) = delete;

  // The broker, as reached through the proxy.
  BrokerEndpoint endpoint() const {
    BrokerEndpoint endpoint = target_;
    endpoint.host = "127.0.0.1";
    endpoint.port = port_;
    return endpoint;
  }

  // After `bytes` more from the client, nothing it sends is read any more (what the broker sends
  // still reaches it).
  void freeze_after(std::size_t bytes) { until_frozen_ = static_cast<std::int64_t>(bytes); }
  // The client's bytes are no longer read: a send of more than the socket buffers hold hangs.
  bool frozen() const { return until_frozen_.load() == 0; }
  // Closes both connections: a client stuck in the socket gets an error.
  void cut() { cut_ = true; }
  // Clients accepted so far.
  int connections() const { return accepted_.load(); }

 private:
  int connect_to_target() const {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(target_.host.c_str(), std::to_string(target_.port).c_str(), &hints, &found) !=
        0)
      return -1;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
      ::close(fd);
      ::freeaddrinfo(found);
      return -1;
    }
    ::freeaddrinfo(found);
    return fd;
  }

  // Copies what is readable on `from` to `to`, at most `limit` bytes; false when either side is
  // gone.
  static bool pump(int from, int to, std::size_t limit, std::size_t& copied) {
    char buffer[64 * 1024];
    copied = 0;
    const ssize_t got = ::recv(from, buffer, std::min(sizeof(buffer), limit), 0);
    if (got <= 0)
      return false;
    for (ssize_t sent = 0; sent < got;) {
      const ssize_t n =
          ::send(to, buffer + sent, static_cast<std::size_t>(got - sent), MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      sent += n;
    }
    copied = static_cast<std::size_t>(got);
    return true;
  }

  void run() {
    int client = -1;
    int broker = -1;
    while (!stopping_.load()) {
      if (client < 0) {
        pollfd listening{listener_, POLLIN, 0};
        if (::poll(&listening, 1, 20) <= 0)
          continue;
        client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0)
          ++accepted_;
        broker = client < 0 ? -1 : connect_to_target();
        if (broker < 0 && client >= 0) {
          ::close(client);
          client = -1;
        }
        continue;
      }
      const std::int64_t until_frozen = until_frozen_.load();
      pollfd fds[2] = {{client, static_cast<short>(until_frozen == 0 ? 0 : POLLIN), 0},
                       {broker, POLLIN, 0}};
      ::poll(fds, 2, 20);
      bool alive = !cut_.load();
      std::size_t copied = 0;
      if (alive && until_frozen != 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const std::size_t limit =
            until_frozen < 0 ? SIZE_MAX : static_cast<std::size_t>(until_frozen);
        alive = pump(client, broker, limit, copied);
        if (until_frozen > 0)
          until_frozen_ -= static_cast<std::int64_t>(copied);
      }
      if (alive && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
        alive = pump(broker, client, SIZE_MAX, copied);
      if (!alive) {
        ::close(client);
        ::close(broker);
        client = broker = -1;
        cut_ = false;
      }
    }
    if (client >= 0) {
      ::close(client);
      ::close(broker);
    }
  }

  const BrokerEndpoint target_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> until_frozen_{-1};  // client bytes still to read; -1: no limit
  std::atomic<bool> cut_{false};
  std::thread thread_;
};

}  // namespace warren::broker::test_support
