// See tls_error_reason.h.
#include "broker/tls_error_reason.h"

#include <openssl/err.h>

namespace warren::broker {

std::string take_tls_error_reason() {
  const unsigned long error = ERR_peek_last_error();
  ERR_clear_error();
  if (error == 0)
    return {};
  const char* reason = ERR_reason_error_string(error);
  return reason != nullptr ? reason : "OpenSSL error " + std::to_string(error);
}

}  // namespace warren::broker
