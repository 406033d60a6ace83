// Frames the worker keeps back to send together. A child that runs fast handlers while more
// Delivers wait sends its Outcomes (and the log lines and metric records before them) in one
// sendmmsg(), so the host wakes once for several messages, not once each: a wake-up costs the
// host more than a no-op handler costs the child (docs/benchmarks.md, process isolation).
//
// They are encoded when kept, so that a fatal signal in a handler can still send them
// (send_from_signal() is async-signal-safe) and the host hears which messages ran before the
// crash: it then blames exactly the one that crashed, and runs none of the others again.
// Not thread-safe: the caller's lock serialises keep() and send(); send_from_signal() only
// reads, and gives up if it finds the frames being changed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "isolation/frame_socket.h"

namespace warren::isolation {

class HeldFrames {
 public:
  using Clock = std::chrono::steady_clock;

  // Keeps FRAME after those kept before; OUTCOME: it is an Outcome (outcomes() counts them).
  void keep(const Frame& frame, bool outcome);
  // Sends everything kept, in order, then forgets it (also when the send fails: the peer is gone).
  bool send(FrameSocket& socket, std::chrono::milliseconds timeout);

  bool empty() const noexcept { return since_ns_.load(std::memory_order_relaxed) == 0; }
  std::size_t outcomes() const noexcept { return outcomes_; }
  // When the oldest kept frame was kept (any thread may ask); the epoch when none is.
  Clock::time_point since() const noexcept {
    return Clock::time_point(Clock::duration(since_ns_.load(std::memory_order_relaxed)));
  }

  // From a fatal-signal handler: writes the kept packets to FD (non-blocking, no allocation),
  // unless they are being changed at this moment.
  void send_from_signal(int fd) const noexcept;

 private:
  PacketWriter packets_;
  std::size_t outcomes_ = 0;
  std::atomic<Clock::rep> since_ns_{0};
  // false while packets_ changes: a signal handler must not read them then.
  std::atomic<bool> stable_{true};
};

}  // namespace warren::isolation
