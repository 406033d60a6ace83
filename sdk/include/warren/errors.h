// Exceptions with a meaning to the host. Any other exception thrown by a handler means
// "retry under the worker's policy".
#pragma once

#include <stdexcept>

namespace warren {

// The message can never succeed (malformed body, unknown entity...): dead-letter it at once,
// with what() as the reason.
class PermanentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Context::publish failed: the broker nacked or returned the message, or the deadline passed.
// Left uncaught it fails the handler, so the incoming message is retried.
class PublishError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace warren
