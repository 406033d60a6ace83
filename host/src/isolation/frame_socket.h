// One end of the host <-> worker socket pair (socketpair(AF_UNIX, SOCK_SEQPACKET)): packets keep
// their boundaries, reading returns 0 once the peer is gone (a dead child is an EOF, not a
// timeout), and sends use MSG_NOSIGNAL so a dead peer is an error, not a SIGPIPE for the host.
// Owns its descriptor. One thread may send while another receives; two senders (or two
// receivers) need the caller's lock.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <span>
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
  // Sends FRAMES in order, as many packets per system call as the socket takes (sendmmsg), so
  // that a peer asleep in recv() wakes once and finds them all; otherwise as send().
  bool send_all(std::span<const Frame> frames, std::chrono::milliseconds timeout);
  // The same for frames already packed (PacketWriter).
  bool send_packets(std::span<const std::string> packets, std::chrono::milliseconds timeout);

  enum class Status { frame, would_block, closed };
  // One frame if a whole one is readable now, without waiting (the descriptor polled readable
  // is the caller's business). `closed`: EOF or an error; the reason is in closed_reason().
  // Throws FrameError for a malformed frame.
  Status receive(Frame& frame);
  // Waits in recv() itself, up to TIMEOUT per packet (kForever: no limit), for a whole frame:
  // one system call where a frame is coming, not a failed non-blocking read and a poll() first.
  // `would_block`: the time ran out (a frame half read stays assembled for the next call).
  static constexpr std::chrono::milliseconds kForever = std::chrono::milliseconds::max();
  Status receive_waiting(Frame& frame, std::chrono::milliseconds timeout);
  // Frames of a packet already read wait: the next receive() needs no system call.
  bool holds_frames() const noexcept { return ready_next_ < ready_.size(); }
  // Waits up to TIMEOUT for a whole frame; std::nullopt when the time ran out or the peer closed
  // (closed() tells which).
  std::optional<Frame> receive_within(std::chrono::milliseconds timeout);
  // Either side found the socket unusable.
  bool closed() const noexcept { return send_failed_ || receive_ended_; }
  // Why: the receiving side's reason (e.g. "end of stream") if it ended, else the sending side's.
  // Read it from the thread that saw the failure.
  const std::string& closed_reason() const noexcept {
    return receive_ended_ ? receive_end_ : send_failure_;
  }

 private:
  // recv() flags: MSG_DONTWAIT for receive(), 0 for receive_waiting().
  Status read_frame(Frame& frame, int flags);
  // Decodes the next frame of ready_.
  Status take_ready(Frame& frame);

  int fd_ = -1;
  // The SO_RCVTIMEO last set (zero: none, the kernel's default), so that it is set only when
  // it changes.
  std::chrono::milliseconds receive_timeout_{0};
  PacketAssembler assembler_;
  std::string buffer_;
  // Whole frames of the last packet not yet returned (a batch packet holds several): views into
  // buffer_ or the assembler, which are not touched until every one is taken.
  std::vector<std::string_view> ready_;
  std::size_t ready_next_ = 0;
  // Each side writes only its own pair, so a sender and a receiver never race.
  std::atomic<bool> send_failed_ = false;
  std::string send_failure_;
  std::atomic<bool> receive_ended_ = false;
  std::string receive_end_;
  bool peer_left_frames_unread_ = false;  // ECONNRESET seen: said in receive_end_ at the end
};

}  // namespace warren::isolation
