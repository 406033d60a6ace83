// HTTP Basic authentication (RFC 7617) for the metrics endpoint. The credentials are compared in
// constant time: how long a check takes depends only on what the client sent, never on how much
// of the user or password it got right.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace warren::observability {

class BasicAuth {
 public:
  BasicAuth(std::string user, std::string password)
      : user_(std::move(user)), password_(std::move(password)) {}

  // True when `authorization` (an Authorization header's value) is "Basic <base64(user:password)>"
  // with this user and password. The scheme is case-insensitive.
  bool accepts(std::string_view authorization) const;

  // The WWW-Authenticate value sent with a 401.
  static constexpr const char* kChallenge = "Basic realm=\"warren\", charset=\"UTF-8\"";

 private:
  std::string user_;
  std::string password_;
};

// Standard base64 (RFC 4648 section 4), padding optional; nullopt on anything else.
std::optional<std::string> decode_base64(std::string_view text);

// Equal contents, in a time that depends on `supplied`'s length only.
bool constant_time_equals(std::string_view supplied, std::string_view expected);

}  // namespace warren::observability
