// A minimal blocking HTTP/1.0 client for the endpoint tests: one request per connection, reads
// until the server closes. Enough to see status, headers and body exactly as sent on the wire;
// and the clients of the limits tests: a request awaited later, and a client that never finishes
// its request.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace warren::observability::testing {

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  std::string header(const std::string& lower_case_name) const {
    const auto it = headers.find(lower_case_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

inline std::string lower(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

inline HttpResponse parse_http_response(const std::string& raw) {
  const std::size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos)
    throw std::runtime_error("incomplete HTTP response: " + raw);
  HttpResponse response;
  std::size_t line_start = 0;
  std::size_t line_end = raw.find("\r\n");
  const std::string status_line = raw.substr(0, line_end);  // "HTTP/1.1 200 OK"
  response.status = std::stoi(status_line.substr(status_line.find(' ') + 1));
  while (line_end < head_end) {
    line_start = line_end + 2;
    line_end = raw.find("\r\n", line_start);
    const std::string line = raw.substr(line_start, line_end - line_start);
    const std::size_t colon = line.find(':');
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    response.headers[lower(line.substr(0, colon))] = value;
  }
  response.body = raw.substr(head_end + 4);
  return response;
}

// A TCP connection to the loopback address (127.0.0.1, or ::1 with ipv6) on `port`; throws when
// nothing accepts it. The caller closes the descriptor.
inline int connect_to_loopback(std::uint16_t port, bool ipv6 = false) {
  const int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    throw std::runtime_error("socket() failed");
  int connected = -1;
  if (ipv6) {
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_port = htons(port);
    address.sin6_addr = in6addr_loopback;
    connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  }
  if (connected != 0) {
    ::close(fd);
    throw std::runtime_error(std::string("cannot connect to ") + (ipv6 ? "[::1]:" : "127.0.0.1:") +
                             std::to_string(port));
  }
  return fd;
}

inline void send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += static_cast<std::size_t>(n);
  }
}

inline std::string request_text(const std::string& method, const std::string& path,
                                const std::string& extra_headers) {
  return method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + extra_headers +
         "Connection: close\r\n\r\n";
}

// Reads from `fd` until the peer closes it or `timeout` passes; true when it was closed.
inline bool read_until_closed(int fd, std::string& into, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd readable{fd, POLLIN, 0};
    if (::poll(&readable, 1, static_cast<int>(left.count())) <= 0)
      continue;  // nothing yet (or EINTR): the deadline decides
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0)
      return true;
    into.append(buffer, static_cast<std::size_t>(n));
  }
}

// Sends `method path` to the loopback address on `port` with the extra header lines
// ("Name: value\r\n"...) and reads the whole answer (the server closes the connection).
inline HttpResponse http_request(std::uint16_t port, const std::string& method,
                                 const std::string& path, const std::string& extra_headers = {},
                                 bool ipv6 = false) {
  const int fd = connect_to_loopback(port, ipv6);
  send_all(fd, request_text(method, path, extra_headers));
  std::string raw;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0)
      break;
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return parse_http_response(raw);
}

// A GET sent now whose answer is awaited later, for as long as the test chooses: to see whether
// the server answers while something else holds its threads.
class PendingRequest {
 public:
  PendingRequest(std::uint16_t port, const std::string& path) : fd_(connect_to_loopback(port)) {
    send_all(fd_, request_text("GET", path, {}));
  }
  ~PendingRequest() { ::close(fd_); }
  PendingRequest(const PendingRequest&) = delete;
  PendingRequest& operator=(const PendingRequest&) = delete;

  // The answer, once the server has sent it and closed the connection; nothing if it has not
  // within `timeout` (the request stays pending: wait again).
  std::optional<HttpResponse> answer_within(std::chrono::milliseconds timeout) {
    if (!closed_)
      closed_ = read_until_closed(fd_, raw_, timeout);
    if (!closed_)
      return std::nullopt;
    return parse_http_response(raw_);
  }

 private:
  int fd_;
  std::string raw_;
  bool closed_ = false;
};

// A client that connects and sends the start of a request, then nothing more: it holds one of
// the server's worker threads (reading its headers) until it leaves or the server times it out.
class SlowClient {
 public:
  explicit SlowClient(std::uint16_t port) : fd_(connect_to_loopback(port)) {
    send_all(fd_, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  }
  ~SlowClient() { leave(); }
  SlowClient(const SlowClient&) = delete;
  SlowClient& operator=(const SlowClient&) = delete;

  void leave() {
    if (fd_ >= 0)
      ::close(std::exchange(fd_, -1));
  }
  // Whether the server closed the connection within `timeout`.
  bool closed_by_server_within(std::chrono::milliseconds timeout) {
    std::string ignored;
    return read_until_closed(fd_, ignored, timeout);
  }

 private:
  int fd_;
};

inline HttpResponse http_get(std::uint16_t port, const std::string& path,
                             const std::string& extra_headers = {}) {
  return http_request(port, "GET", path, extra_headers);
}

// Whether anything accepts connections on 127.0.0.1:port.
inline bool accepts_connections(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

}  // namespace warren::observability::testing
