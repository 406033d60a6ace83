// One end of the host <-> worker socket pair (socketpair(AF_UNIX, SOCK_SEQPACKET)): packets keep
// their boundaries, reading returns 0 once the peer is gone (a dead child is an EOF, not a
// timeout), and sends use MSG_NOSIGNAL so a dead peer is an error, not a SIGPIPE for the host.
// Owns its descriptor. Not thread-safe: one thread sends and receives, or the caller locks.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "isolation/frames.h"
#include "isolation/packet_assembler.h"

namespace warren::isolation {

class FrameSocket {
 public:
  explicit FrameSocket(int fd, std::size_t max_frame = kDefaultMaxFrame) noexcept
      : fd_(fd), assembler_(max_frame) {}
  FrameSocket(FrameSocket&& other) noexcept;
  FrameSocket& operator=(FrameSocket&& other) noexcept;
  FrameSocket(const FrameSocket&) = delete;
  FrameSocket& operator=(const FrameSocket&) = delete;
  ~FrameSocket();

  // A connected pair, both ends close-on-exec (the spawner dup2()s the child's end, which clears
  // the flag on the copy only).
  static std::pair<FrameSocket, FrameSocket> pair();

  int fd() const noexcept { return fd_; }
  // Gives up the descriptor (the caller closes it).
  int release() noexcept { return std::exchange(fd_, -1); }
  // Sends FRAME whole, waiting for room in the socket at most TIMEOUT altogether. false when the
  // peer is gone or did not read in time (the caller treats both as a dead peer).
  bool send(const Frame& frame, std::chrono::milliseconds timeout);

  enum class Status { frame, would_block, closed };
  // One frame if a whole one is readable now, without waiting (the descriptor polled readable
  // is the caller's business). `closed`: EOF or an error; the reason is in closed_reason().
  // Throws FrameError for a malformed frame.
  Status receive(Frame& frame);
  // Waits up to TIMEOUT for a whole frame; std::nullopt when the time ran out or the peer closed
  // (closed() tells which).
  std::optional<Frame> receive_within(std::chrono::milliseconds timeout);
  bool closed() const noexcept { return closed_; }
  const std::string& closed_reason() const noexcept { return closed_reason_; }

 private:
  int fd_ = -1;
  PacketAssembler assembler_;
  std::string buffer_;
  bool closed_ = false;
  std::string closed_reason_;
};

}  // namespace warren::isolation
