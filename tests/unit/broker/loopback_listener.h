// A listening TCP socket on 127.0.0.1 with a port the kernel picks, for the fake brokers of the
// I/O loop's tests (hanging_up_broker.h, freezing_proxy.h).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace warren::broker::test_support {

struct LoopbackListener {
  int fd = -1;
  int port = 0;
};

// Throws std::runtime_error when it cannot listen.
inline LoopbackListener listen_on_loopback(int backlog) {
  LoopbackListener listener{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), 0};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listener.fd < 0 || ::bind(listener.fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener.fd, backlog) != 0 ||
      ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (listener.fd >= 0)
      ::close(listener.fd);
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  listener.port = ntohs(address.sin_port);
  return listener;
}

}  // namespace warren::broker::test_support
