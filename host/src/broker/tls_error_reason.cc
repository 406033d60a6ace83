// See tls_error_reason.h.
#include "broker/tls_error_reason.h"

#include <openssl/err.h>

#include <system_error>

namespace warren::broker {

std::string take_tls_error_reason() {
  // A failed file read queues the OS error first and OpenSSL's "system lib" after it: the OS
  // error is the one that says something ("No such file or directory").
  unsigned long last = 0;
  int os_error = 0;
  for (unsigned long error = ERR_get_error(); error != 0; error = ERR_get_error()) {
    if (os_error == 0 && ERR_SYSTEM_ERROR(error))
      os_error = ERR_GET_REASON(error);
    last = error;
  }
  if (os_error != 0)
    return std::error_code(os_error, std::generic_category()).message();
  if (last == 0)
    return {};
  const char* reason = ERR_reason_error_string(last);
  return reason != nullptr ? reason : "OpenSSL error " + std::to_string(last);
}

}  // namespace warren::broker
