// A minimal blocking HTTP/1.0 client for the endpoint tests: one request per connection, reads
// until the server closes. Enough to see status, headers and body exactly as sent on the wire.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <map>
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

// Sends `method path` to 127.0.0.1:port with the extra header lines ("Name: value\r\n"...).
inline HttpResponse http_request(std::uint16_t port, const std::string& method,
                                 const std::string& path, const std::string& extra_headers = {}) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
  }
  const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" +
                              extra_headers + "Connection: close\r\n\r\n";
  std::size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += static_cast<std::size_t>(n);
  }
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
