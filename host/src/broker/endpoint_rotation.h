// Which broker endpoint ([broker] hosts) a connection tries next. The list is walked in order from
// the first entry; after a failure (a connect that failed, or a connection that was lost) the next
// attempt goes to the next entry, so that every other endpoint is tried before the one that
// failed comes round again. A connection that works stays where it is.
//
// Why (issue 21): a host whose node froze (SIGSTOP, a VM paused, a half-open network) notices it
// by its heartbeat; going back to that node first costs a whole connect timeout, since the frozen
// node's kernel still accepts the TCP connection and nothing ever answers the handshake.
#pragma once

#include <cstddef>
#include <stdexcept>

namespace warren::broker {

class EndpointRotation {
 public:
  // Throws std::invalid_argument for an empty list.
  explicit EndpointRotation(std::size_t endpoints);

  // The index of the endpoint to use or try now.
  std::size_t current() const noexcept { return current_; }
  // The current endpoint failed (it refused or timed out, or its connection was lost): the next
  // attempt goes to the next one, wrapping round.
  void failed() noexcept { current_ = (current_ + 1) % count_; }

 private:
  std::size_t count_;
  std::size_t current_ = 0;
};

}  // namespace warren::broker
