// Exceptions with a meaning to the host. Any other exception thrown by a handler means
// "retry under the worker's policy".
#pragma once

#include <stdexcept>

#include "warren/outcome.h"

namespace warren {

// The message can never succeed (malformed body, unknown entity...): dead-letter it at once,
// with what() as the reason. Throwing it is returning outcome(), i.e.
// Outcome::dead_letter(what()), from wherever the handler is: the host dead-letters the message
// the same way. Because it was thrown, the host also counts it in
// warren_handler_exceptions_total{type="permanent"} and prefixes the dead-letter reason with
// the exception's type; the harness reports Result::Error::permanent.
class PermanentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  // The outcome this exception stands for.
  Outcome outcome() const { return Outcome::dead_letter(what()); }
};

// Context::publish failed: the broker nacked or returned the message, or the deadline passed.
// Left uncaught it fails the handler, so the incoming message is retried.
class PublishError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace warren
