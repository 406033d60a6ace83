// Fuzz target: what the metrics endpoint decides about a request (observability/http_server.h,
// basic_auth.h): the method, the path and the Authorization header as civetweb hands them over.
// Only the three paths answer; /metrics answers 200 only to the configured user and password
// (base64 round trip included), 401 to any other credentials, whatever bytes they hold.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "observability/basic_auth.h"
#include "observability/health.h"
#include "observability/http_server.h"
#include "observability/metrics.h"

namespace {

using warren::fuzz::require;

using warren::observability::BasicAuth;
using warren::observability::MetricsServer;

constexpr std::string_view kUser = "prometheus";
constexpr std::string_view kPassword = "s3cret:with colon";

std::string encode_base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6)
      out.push_back(kAlphabet[(n >> shift) & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2)
      n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out += rest == 2 ? std::string(1, kAlphabet[(n >> 6) & 63]) + "=" : std::string("==");
  }
  return out;
}

struct Server {
  warren::observability::Metrics metrics;
  warren::observability::Health health;
  MetricsServer server{
      metrics, health, {"127.0.0.1:0", std::string(kUser), std::string(kPassword)}};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Server* const fixture = new Server;  // never started: respond() alone
  static const BasicAuth auth{std::string(kUser), std::string(kPassword)};
  FuzzedDataProvider input(data, size);

  static constexpr std::array<std::string_view, 5> kMethods = {"GET", "HEAD", "POST", "get", ""};
  static constexpr std::array<std::string_view, 6> kPaths = {"/metrics",  "/healthz", "/readyz",
                                                             "/metrics/", "/",        "//metrics"};
  const std::string method = input.ConsumeBool() ? std::string(input.PickValueInArray(kMethods))
                                                 : input.ConsumeRandomLengthString(8);
  const std::string path = input.ConsumeBool() ? std::string(input.PickValueInArray(kPaths))
                                               : input.ConsumeRandomLengthString(32);

  // Credentials: as a client encodes them (maybe the right ones), or any header value at all.
  std::string authorization;
  std::optional<bool> right_credentials;  // known when the header was encoded here
  const int shape = input.ConsumeIntegralInRange(0, 2);
  if (shape == 0) {
    const bool right = input.ConsumeBool();
    const std::string user = right ? std::string(kUser) : input.ConsumeRandomLengthString(16);
    const std::string password =
        right ? std::string(kPassword) : input.ConsumeRandomLengthString(24);
    const std::string pair = user + ":" + password;
    const auto decoded = warren::observability::decode_base64(encode_base64(pair));
    require(decoded && *decoded == pair);  // base64 round trip
    right_credentials = user == kUser && password == kPassword;
    authorization = std::string(input.ConsumeBool() ? "Basic " : "bAsIc  ") + encode_base64(pair);
  } else {
    // As a C string: civetweb's header values end at the first NUL.
    authorization = input.ConsumeRemainingBytesAsString().c_str();
  }
  const bool has_header = shape != 2 || !authorization.empty();

  if (right_credentials)
    require(auth.accepts(authorization) == *right_credentials);
  (void)warren::observability::constant_time_equals(authorization, kPassword);

  const auto response =
      fixture->server.respond(method, path, has_header ? authorization.c_str() : nullptr);
  const bool known_path = path == "/metrics" || path == "/healthz" || path == "/readyz";
  if (!known_path) {
    require(response.status == 404);
  } else if (path == "/metrics" && !(has_header && auth.accepts(authorization))) {
    require(response.status == 401);
  } else if (method != "GET" && method != "HEAD") {
    require(response.status == 405);
  } else {
    require(response.status == 200 || response.status == 503);
  }
  if (path == "/metrics" && right_credentials == false)
    require(response.status == 401);
  return 0;
}
