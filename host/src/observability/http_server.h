// The HTTP endpoints that Prometheus and Kubernetes read, served by civetweb on [metrics] listen
// (default 127.0.0.1:9464):
//   GET /metrics  200, Prometheus text format 0.0.4: Metrics::serialize()
//   GET /healthz  200 "ok" while every registered loop ticks (liveness); 503 naming the
//                 stalled loops
//   GET /readyz   200 "ready" when the readiness probe says so; 503 "not ready", then why, a
//                 line each (not connected; a worker's queue missing, with its name)
// HEAD is answered like GET without a body; other methods get 405, other paths 404.
//
// Authentication: when a user is set, /metrics needs HTTP Basic credentials (401 with a
// WWW-Authenticate challenge otherwise). /healthz and /readyz stay open on purpose: kubelet probes
// cannot easily send credentials, and they reveal only up/down, and why a worker does not
// consume (names of workers and queues, never message data or credentials). Basic credentials cross
// the network in clear text, so listen on loopback or a private network (or behind a TLS proxy); a
// non-loopback address logs a warning at start.
//
// Debian's civetweb 1.15 is built without IPv6: "[::1]:9464" is refused at config load (the CLI
// passes supports_ipv6() to the loader, so `warren check` says so) and again here at start.
//
// civetweb serves one connection per worker thread, and a client that sends its request slowly
// (or never) holds its thread until the request timeout. Eight threads by default and a 3 s
// timeout keep /healthz answering within the kubelet's 1 s probe timeout beside a few slow
// clients (issue 19, defect 7: with two threads and 10 s, two slow clients starved the liveness
// probe and got a healthy host killed).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "observability/basic_auth.h"
#include "observability/health.h"
#include "observability/metrics.h"

struct mg_context;
struct mg_connection;

namespace warren::observability {

// start() could not serve: the message names the address and why (port in use, bad address...).
class MetricsServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MetricsServerOptions {
  std::string listen = "127.0.0.1:9464";  // host:port; port 0 picks a free port
  std::string user;                       // empty: /metrics is open
  std::string password;
  int threads = 8;  // civetweb worker threads, 1 to 32
};

class MetricsServer {
 public:
  // Metrics and Health must outlive the server (or at least its stop()).
  MetricsServer(const Metrics& metrics, const Health& health, MetricsServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and starts answering. Throws MetricsServerError naming the address on failure.
  void start();
  // Stops listening and waits for requests in progress. Idempotent.
  void stop() noexcept;

  bool running() const noexcept { return context_ != nullptr; }
  // The bound port (the one the system picked when listen asked for port 0); 0 when stopped.
  std::uint16_t port() const noexcept { return port_; }

  // Whether the linked civetweb can listen on IPv6 addresses.
  static bool supports_ipv6() noexcept;

  // The answer to one request, routed by exact path with the Basic credentials checked:
  // everything this server decides about a request, without civetweb (which parses the request
  // line and headers); what tests/fuzz/metrics_request.cc drives. `authorization` is the
  // Authorization header's value, nullptr when absent.
  struct Response {
    int status = 200;
    const char* content_type = nullptr;
    std::string body;
    std::vector<std::pair<const char*, const char*>> headers;
  };
  Response respond(std::string_view method, std::string_view path, const char* authorization) const;

 private:
  static int handle_request(mg_connection* connection, void* server) noexcept;
  static int handle_log_message(const mg_connection* connection, const char* message) noexcept;

  const Metrics& metrics_;
  const Health& health_;
  const MetricsServerOptions options_;
  const BasicAuth auth_;
  mg_context* context_ = nullptr;
  std::uint16_t port_ = 0;
  // The IPv4 address (network byte order) stop() connects to, to wake civetweb's accept loop.
  std::optional<std::uint32_t> wake_ipv4_;

  // civetweb reports why it failed to start through its log callback; start() collects it.
  std::mutex start_log_mutex_;
  bool starting_ = false;
  std::vector<std::string> start_log_;
};

}  // namespace warren::observability
