// See http_server.h. civetweb's C API: one request handler on "/" (a prefix that matches every
// path) routes by exact path, so every answer, 404 and 405 included, is written here.
#include "observability/http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "observability/listen_address.h"
#include "observability/log.h"

namespace warren::observability {
namespace {

// See http_server.h: enough threads and a short request timeout that slow clients cannot starve
// the probes for long.
constexpr int kMaxThreads = 32;
constexpr const char* kRequestTimeoutMs = "3000";
constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kTextContentType = "text/plain; charset=utf-8";
constexpr const char* kAllowedMethods = "GET, HEAD";

void initialize_civetweb_once() {
  static std::once_flag once;
  // Features 0: no TLS. The return value is the set of features initialized, so 0 here is fine.
  std::call_once(once, [] { mg_init_library(0); });
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Where a local connection reaches the server (for waking it at stop), when that can be told
// without a name lookup: the IPv4 address itself, or loopback for 0.0.0.0 and "localhost".
std::optional<std::uint32_t> local_ipv4_for(const ListenAddress& address) {
  if (address.ipv6)
    return std::nullopt;
  if (address.host == "localhost" || address.host == "0.0.0.0")
    return htonl(INADDR_LOOPBACK);
  in_addr ip{};
  if (inet_pton(AF_INET, address.host.c_str(), &ip) == 1)
    return ip.s_addr;
  return std::nullopt;
}

// Opens and closes a connection without waiting: enough to wake civetweb's accept loop.
void poke(std::uint32_t ipv4, std::uint16_t port) noexcept {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return;
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_addr.s_addr = ipv4;
  target.sin_port = htons(port);
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof target);
  ::close(fd);
}

}  // namespace

MetricsServer::MetricsServer(const Metrics& metrics, const Health& health,
                             MetricsServerOptions options)
    : metrics_(metrics),
      health_(health),
      options_(std::move(options)),
      auth_(options_.user, options_.password) {}

MetricsServer::~MetricsServer() {
  stop();
}

bool MetricsServer::supports_ipv6() noexcept {
  return mg_check_feature(MG_FEATURES_IPV6) != 0;
}

void MetricsServer::start() {
  if (context_ != nullptr)
    return;
  const auto fail = [this](const std::string& why) -> MetricsServerError {
    return MetricsServerError("metrics endpoint cannot listen on " + options_.listen + ": " + why);
  };
  ListenAddress address;
  try {
    address = ListenAddress::parse(options_.listen);
  } catch (const std::invalid_argument& error) {
    throw fail(error.what());
  }
  if (address.ipv6 && !supports_ipv6()) {
    throw fail(
        "the civetweb library Warren is linked with (Debian libcivetweb 1.15) was built without "
        "IPv6 support; set [metrics] listen to an IPv4 address such as 127.0.0.1:9464 or "
        "0.0.0.0:9464");
  }
  initialize_civetweb_once();

  const std::string listening_ports = address.to_string();
  const std::string threads = std::to_string(std::clamp(options_.threads, 1, kMaxThreads));
  const char* civetweb_options[] = {"listening_ports",
                                    listening_ports.c_str(),
                                    "num_threads",
                                    threads.c_str(),
                                    "request_timeout_ms",
                                    kRequestTimeoutMs,
                                    "enable_keep_alive",
                                    "no",
                                    nullptr};
  static const mg_callbacks callbacks = [] {
    mg_callbacks c;
    std::memset(&c, 0, sizeof c);
    c.log_message = &MetricsServer::handle_log_message;
    return c;
  }();
  mg_init_data init{&callbacks, this, civetweb_options};
  unsigned error_code = 0;
  char error_text[256] = "";
  mg_error_data error{&error_code, error_text, sizeof error_text};

  {
    std::lock_guard lock(start_log_mutex_);
    starting_ = true;
    start_log_.clear();
  }
  mg_context* context = mg_start2(&init, &error);
  std::vector<std::string> start_log;
  {
    std::lock_guard lock(start_log_mutex_);
    starting_ = false;
    start_log.swap(start_log_);
  }
  if (context == nullptr) {
    // civetweb's own error text is generic ("Failed to setup server ports"); the specific reason
    // ("cannot bind to ...: 98 (Address already in use)") came through the log callback.
    std::string why;
    for (const auto& line : start_log) {
      if (line == error_text)
        continue;
      why += (why.empty() ? "" : "; ") + line;
    }
    if (why.empty())
      why = error_text[0] != '\0' ? error_text : "civetweb refused to start";
    if (contains(why, "Address already in use")) {
      why +=
          ". Another process holds this port: stop it, or change [metrics] listen (or set "
          "[metrics] enabled = false)";
    }
    throw fail(why);
  }
  context_ = context;
  wake_ipv4_ = local_ipv4_for(address);
  mg_set_request_handler(context_, "/", &MetricsServer::handle_request, this);

  mg_server_port bound{};
  port_ = mg_get_server_ports(context_, 1, &bound) == 1 ? static_cast<std::uint16_t>(bound.port)
                                                        : address.port;
  ListenAddress shown = address;
  shown.port = port_;
  const bool protected_metrics = !options_.user.empty();
  if (!address.is_loopback()) {
    log_warn("metrics endpoint listens on " + shown.to_string() +
             ", reachable from other machines: " +
             (protected_metrics
                  ? "/metrics needs basic auth, but credentials travel unencrypted over HTTP"
                  : "/metrics is open to anyone who can connect; set [metrics] user and "
                    "password_file, or listen on 127.0.0.1"));
  }
  log_info("metrics endpoint on http://" + shown.to_string() + ": /metrics" +
           (protected_metrics ? " (basic auth)" : "") + ", /healthz, /readyz");
}

void MetricsServer::stop() noexcept {
  if (context_ == nullptr)
    return;
  mg_context* const context = std::exchange(context_, nullptr);
  const std::uint16_t port = std::exchange(port_, 0);
  // mg_stop raises civetweb's stop flag at once, then waits for the accept loop, which looks at
  // the flag only between polls of up to 2 s. A connection wakes that poll: stop takes
  // milliseconds instead of up to 2 s. A connection that arrives before the flag is raised is
  // accepted, read to its immediate end and closed, harmlessly.
  std::atomic<bool> stopped{false};
  std::thread stopper;
  try {
    stopper = std::thread([context, &stopped] {
      mg_stop(context);
      stopped = true;
    });
  } catch (...) {
    mg_stop(context);
    return;
  }
  if (wake_ipv4_) {
    for (int attempt = 0; !stopped && attempt < 200; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(attempt == 0 ? 5 : 20));
      if (!stopped)
        poke(*wake_ipv4_, port);
    }
  }
  stopper.join();
}

MetricsServer::Response MetricsServer::respond(std::string_view method, std::string_view path,
                                               const char* authorization) const {
  const bool is_metrics = path == "/metrics";
  if (!is_metrics && path != "/healthz" && path != "/readyz")
    return {404, kTextContentType, "not found: try /metrics, /healthz or /readyz\n", {}};
  if (is_metrics && !options_.user.empty() &&
      (authorization == nullptr || !auth_.accepts(authorization))) {
    return {401,
            kTextContentType,
            "authentication required\n",
            {{"WWW-Authenticate", BasicAuth::kChallenge}}};
  }
  if (method != "GET" && method != "HEAD")
    return {405, kTextContentType, "method not allowed: use GET\n", {{"Allow", kAllowedMethods}}};

  if (is_metrics)
    return {200, kMetricsContentType, metrics_.serialize(), {}};
  if (path == "/healthz") {
    const Health::Liveness liveness = health_.liveness();
    if (liveness.alive)
      return {200, kTextContentType, "ok\n", {}};
    std::string body = "stalled:";
    for (const auto& name : liveness.stalled)
      body += " " + name;
    return {503, kTextContentType, body + "\n", {}};
  }
  const Health::Readiness readiness = health_.readiness();
  if (readiness.ready)
    return {200, kTextContentType, "ready\n", {}};
  std::string body = "not ready\n";
  for (const auto& reason : readiness.reasons)
    body += reason + "\n";
  return {503, kTextContentType, body, {}};
}

int MetricsServer::handle_request(mg_connection* connection, void* server) noexcept {
  const auto& self = *static_cast<const MetricsServer*>(server);
  const mg_request_info* request = mg_get_request_info(connection);
  const std::string_view method = request->request_method ? request->request_method : "";
  Response response;
  try {
    response = self.respond(method, request->local_uri ? request->local_uri : "",
                            mg_get_header(connection, "Authorization"));
  } catch (const std::exception& error) {
    log_error(std::string("metrics endpoint: ") + error.what());
    response = {500, kTextContentType, "internal error\n", {}};
  } catch (...) {
    response = {500, kTextContentType, "internal error\n", {}};
  }
  try {
    const std::string length = std::to_string(response.body.size());
    mg_response_header_start(connection, response.status);
    mg_response_header_add(connection, "Content-Type", response.content_type, -1);
    mg_response_header_add(connection, "Content-Length", length.c_str(), -1);
    mg_response_header_add(connection, "Cache-Control", "no-store", -1);
    for (const auto& [name, value] : response.headers)
      mg_response_header_add(connection, name, value, -1);
    mg_response_header_send(connection);
    if (method != "HEAD")
      mg_write(connection, response.body.data(), response.body.size());
  } catch (...) {
    // Out of memory while answering: civetweb closes the connection.
  }
  return response.status;
}

int MetricsServer::handle_log_message(const mg_connection* connection,
                                      const char* message) noexcept {
  try {
    auto* self = static_cast<MetricsServer*>(mg_get_user_data(mg_get_context(connection)));
    if (self != nullptr) {
      std::lock_guard lock(self->start_log_mutex_);
      if (self->starting_) {
        self->start_log_.emplace_back(message);
        return 1;
      }
    }
    // Client-side trouble (timeouts, resets, malformed requests): worth a look only when
    // debugging.
    log_debug(std::string("metrics endpoint (civetweb): ") + message);
  } catch (...) {
  }
  return 1;  // civetweb writes nothing itself
}

}  // namespace warren::observability
