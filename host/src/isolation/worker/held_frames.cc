#include "isolation/worker/held_frames.h"

#include <sys/socket.h>

#include "isolation/packet_assembler.h"

namespace warren::isolation {

void HeldFrames::keep(const Frame& frame, bool outcome) {
  stable_.store(false);  // the packet being filled may move
  try {
    packets_.add_encoded([&](FrameWriter& out) { encode_to(frame, out); });
  } catch (...) {
    stable_.store(true);  // the packets are as they were
    throw;
  }
  stable_.store(true);
  if (outcome)
    ++outcomes_;
  if (since_ns_.load(std::memory_order_relaxed) == 0)
    since_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

bool HeldFrames::send(FrameSocket& socket, std::chrono::milliseconds timeout) {
  if (packets_.empty())
    return !socket.closed();
  const bool sent = socket.send_packets(packets_.packets(), timeout);
  stable_.store(false);
  packets_.clear();
  stable_.store(true);
  outcomes_ = 0;
  since_ns_.store(0, std::memory_order_relaxed);
  return sent;
}

void HeldFrames::send_from_signal(int fd) const noexcept {
  if (!stable_.load())
    return;
  for (const std::string& packet : packets_.packets()) {
    if (::send(fd, packet.data(), packet.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
      return;
  }
}

}  // namespace warren::isolation
