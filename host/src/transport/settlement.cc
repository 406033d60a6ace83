// See settlement.h.
#include "transport/settlement.h"

namespace warren::transport {

const char* to_string(Settlement::Kind kind) noexcept {
  switch (kind) {
    case Settlement::Kind::ack:
      return "ack";
    case Settlement::Kind::requeue:
      return "requeue";
    case Settlement::Kind::retry_later:
      return "retry";
    case Settlement::Kind::dead_letter:
      return "dead_letter";
  }
  return "unknown";
}

}  // namespace warren::transport
