// A table queue's database refused a statement or lost its connection.
#pragma once

#include <stdexcept>

namespace warren::queue {

// transient(): busy, full, connection lost: the engine keeps its settlements and tries again
// after a back-off; otherwise it is a bug or a schema that does not match, and it is logged the
// same way (nothing is dropped either way).
class QueueDatabaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual bool transient() const noexcept = 0;
};

}  // namespace warren::queue
