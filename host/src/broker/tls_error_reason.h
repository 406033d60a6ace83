// The reason OpenSSL gave for the last TLS failure on this thread ("tlsv13 alert certificate
// required", "key values mismatch"). rabbitmq-c reports TLS failures as one status ("SSL error"),
// while the broker's alert, which says which check failed, stays in OpenSSL's per-thread queue.
#pragma once

#include <string>

namespace warren::broker {

// The reason of the most recent error in this thread's OpenSSL error queue (the OS error when a
// file could not be read), or "" when it is empty; the queue is cleared, so a later failure never
// shows an old reason.
std::string take_tls_error_reason();

}  // namespace warren::broker
