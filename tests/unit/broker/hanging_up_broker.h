// A fake broker for the I/O loop's tests: a TCP port on 127.0.0.1 that accepts every connection
// and hangs up at once, counting them. A connection to it fails during the AMQP handshake, so
// a test can watch when and where a connection (re)connects without a RabbitMQ.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "broker/broker_endpoint.h"
#include "loopback_listener.h"

namespace warren::broker::test_support {

class HangingUpBroker {
 public:
  HangingUpBroker() {
    const LoopbackListener listener = listen_on_loopback(16);
    fd_ = listener.fd;
    port_ = listener.port;
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~HangingUpBroker() {
    stopping_ = true;
    thread_.join();
    ::close(fd_);
  }
  HangingUpBroker(const HangingUpBroker&) = delete;
  HangingUpBroker& operator=(const HangingUpBroker&) = delete;

  BrokerEndpoint endpoint() const {
    BrokerEndpoint endpoint;
    endpoint.host = "127.0.0.1";
    endpoint.port = port_;
    return endpoint;
  }

  int connections() const {
    std::lock_guard lock(mutex_);
    return connections_;
  }

  // Waits until `count` connections came (false after `patience`).
  bool wait_for_connections(int count, std::chrono::milliseconds patience) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, patience, [&] { return connections_ >= count; });
  }

 private:
  void accept_loop() {
    while (!stopping_.load()) {
      pollfd ready{fd_, POLLIN, 0};
      if (::poll(&ready, 1, 20) <= 0)
        continue;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0)
        continue;
      {
        // Counted before hanging up: when the client sees the hang-up, the count includes it.
        std::lock_guard lock(mutex_);
        ++connections_;
        changed_.notify_all();
      }
      ::close(client);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  int connections_ = 0;
  std::thread thread_;
};

}  // namespace warren::broker::test_support
