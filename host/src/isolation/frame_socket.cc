#include "isolation/frame_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

namespace warren::isolation {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

FrameSocket::FrameSocket(FrameSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      receive_timeout_(other.receive_timeout_),
      assembler_(std::move(other.assembler_)),
      buffer_(std::move(other.buffer_)),
      ready_(std::move(other.ready_)),  // views into buffer_'s heap bytes, which moved with it
      ready_next_(std::exchange(other.ready_next_, 0)),
      send_failed_(other.send_failed_.load()),
      send_failure_(std::move(other.send_failure_)),
      receive_ended_(other.receive_ended_.load()),
      receive_end_(std::move(other.receive_end_)),
      peer_left_frames_unread_(other.peer_left_frames_unread_) {}

FrameSocket& FrameSocket::operator=(FrameSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    receive_timeout_ = other.receive_timeout_;
    assembler_ = std::move(other.assembler_);
    buffer_ = std::move(other.buffer_);
    ready_ = std::move(other.ready_);
    ready_next_ = std::exchange(other.ready_next_, 0);
    send_failed_ = other.send_failed_.load();
    send_failure_ = std::move(other.send_failure_);
    receive_ended_ = other.receive_ended_.load();
    receive_end_ = std::move(other.receive_end_);
    peer_left_frames_unread_ = other.peer_left_frames_unread_;
  }
  return *this;
}

FrameSocket::~FrameSocket() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::pair<FrameSocket, FrameSocket> FrameSocket::pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::system_error(errno, std::generic_category(), "socketpair(AF_UNIX, SOCK_SEQPACKET)");
  return {FrameSocket(fds[0]), FrameSocket(fds[1])};
}

bool FrameSocket::send(const Frame& frame, std::chrono::milliseconds timeout) {
  return send_all(std::span<const Frame>(&frame, 1), timeout);
}

bool FrameSocket::send_all(std::span<const Frame> frames, std::chrono::milliseconds timeout) {
  if (send_failed_)
    return false;
  PacketWriter packets;
  for (const Frame& frame : frames)
    packets.add_encoded([&](FrameWriter& out) { encode_to(frame, out); });
  return send_packets(packets.packets(), timeout);
}

bool FrameSocket::send_packets(std::span<const std::string> packets,
                               std::chrono::milliseconds timeout) {
  if (send_failed_)
    return false;
  // sendmmsg() takes at most UIO_MAXIOV messages a call; a held batch is far smaller.
  constexpr std::size_t kPerCall = 64;
  std::array<iovec, kPerCall> parts;
  std::array<mmsghdr, kPerCall> messages;
  auto deadline = Clock::now() + timeout;
  std::size_t next = 0;
  while (next < packets.size()) {
    const std::size_t count = std::min(kPerCall, packets.size() - next);
    for (std::size_t i = 0; i < count; ++i) {
      const std::string& packet = packets[next + i];
      parts[i] = iovec{const_cast<char*>(packet.data()), packet.size()};
      messages[i] = mmsghdr{};
      messages[i].msg_hdr.msg_iov = &parts[i];
      messages[i].msg_hdr.msg_iovlen = 1;
    }
    int sent =
        ::sendmmsg(fd_, messages.data(), static_cast<unsigned>(count), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      // A SEQPACKET send is whole or fails; a short one is a broken stream.
      for (int i = 0; i < sent; ++i) {
        if (messages[static_cast<std::size_t>(i)].msg_len !=
            packets[next + static_cast<std::size_t>(i)].size()) {
          send_failure_ = "short packet write";
          send_failed_ = true;
          return false;
        }
      }
      next += static_cast<std::size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR)
      continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd writable{fd_, POLLOUT, 0};
      int ready = ::poll(&writable, 1, remaining_ms(deadline));
      if (ready < 0 && errno == EINTR)
        continue;
      if (ready <= 0) {
        // Half a frame may be out: the stream cannot carry another one.
        send_failure_ = "the peer did not read a frame within its time";
        send_failed_ = true;
        return false;
      }
      continue;
    }
    send_failure_ = sent < 0 ? std::strerror(errno) : "no packet written";
    send_failed_ = true;
    return false;
  }
  return true;
}

FrameSocket::Status FrameSocket::receive(Frame& frame) {
  return read_frame(frame, MSG_DONTWAIT);
}

FrameSocket::Status FrameSocket::receive_waiting(Frame& frame, std::chrono::milliseconds timeout) {
  if (receive_ended_)
    return Status::closed;
  // SO_RCVTIMEO 0 means no limit; a positive time below a microsecond would also read as 0.
  const std::chrono::milliseconds wanted = timeout == kForever
                                               ? std::chrono::milliseconds(0)
                                               : std::max(timeout, std::chrono::milliseconds(1));
  if (wanted != receive_timeout_) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(wanted);
    timeval limit{static_cast<time_t>(seconds.count()),
                  static_cast<suseconds_t>((wanted - seconds).count() * 1000)};
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit)) != 0) {
      receive_end_ = std::string("setsockopt(SO_RCVTIMEO): ") + std::strerror(errno);
      receive_ended_ = true;
      return Status::closed;
    }
    receive_timeout_ = wanted;
  }
  return read_frame(frame, 0);
}

FrameSocket::Status FrameSocket::take_ready(Frame& frame) {
  const std::string_view bytes = ready_[ready_next_++];
  if (ready_next_ == ready_.size()) {
    ready_.clear();  // the views only: the bytes stay until the next recv()
    ready_next_ = 0;
  }
  frame = decode(bytes);
  return Status::frame;
}

FrameSocket::Status FrameSocket::read_frame(Frame& frame, int flags) {
  if (ready_next_ < ready_.size())
    return take_ready(frame);  // the rest of a batch packet, before anything else
  if (receive_ended_)
    return Status::closed;
  // A packet is never larger than its payload plus the marker: one buffer of that size reads any.
  buffer_.resize(kPacketPayload + 1);
  while (true) {
    ssize_t got = ::recv(fd_, buffer_.data(), buffer_.size(), flags);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return Status::would_block;
    if (got < 0 && errno == ECONNRESET) {
      // The peer died with packets of ours unread (a child killed mid-window). The kernel says so
      // once, before the packets the peer sent until then: read those (they say which messages
      // ran), then the end of the stream.
      peer_left_frames_unread_ = true;
      continue;
    }
    if (got <= 0) {
      receive_end_ = got < 0                    ? std::strerror(errno)
                     : peer_left_frames_unread_ ? "end of stream (the peer left frames unread)"
                                                : "end of stream";
      receive_ended_ = true;
      return Status::closed;
    }
    assembler_.add_all(std::string_view(buffer_.data(), static_cast<std::size_t>(got)), ready_);
    if (!ready_.empty())
      return take_ready(frame);
  }
}

std::optional<Frame> FrameSocket::receive_within(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  Frame frame;
  while (true) {
    switch (receive(frame)) {
      case Status::frame:
        return frame;
      case Status::closed:
        return std::nullopt;
      case Status::would_block:
        break;
    }
    pollfd readable{fd_, POLLIN, 0};
    int ready = ::poll(&readable, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0)
      return std::nullopt;
    if (ready < 0) {
      receive_end_ = std::strerror(errno);
      receive_ended_ = true;
      return std::nullopt;
    }
  }
}

}  // namespace warren::isolation
