// How an I/O thread sleeps: until its socket has data, its command queue's eventfd fires, or
// the wake-up interval passes. rabbitmq-c services heartbeats only inside its own calls, so the
// interval is at most min(kMaxWakeupInterval, heartbeat / 4).
#pragma once

#include <chrono>

#include "broker/amqp_connection.h"

namespace warren::broker {

// The longest an I/O thread sleeps, whatever the heartbeat: it also bounds how late a deadline
// (a publish timeout, a reconnect) is noticed.
inline constexpr std::chrono::milliseconds kMaxWakeupInterval{50};

std::chrono::milliseconds wakeup_interval(std::chrono::milliseconds heartbeat);

// What a wait found.
struct IoReady {
  // The wakeup fd is readable: the caller drains it (Wakeup::drain) before it takes the queued
  // work. Drained only then, not at every turn: a read of a quiet eventfd is a failed system
  // call, and most turns are woken by the socket (issue 17).
  bool wakeup = false;
  // The socket has data, an error or a hang-up, or rabbitmq-c holds frames or bytes not yet
  // read. When false, a read of the socket would only find it empty.
  bool socket = false;
};

// `connection` may be null (disconnected: only the wakeup fd and the timeout count). Returns at
// once, without polling, while rabbitmq-c holds frames or bytes not yet read (the wakeup fd, if
// signalled, stays readable for a later turn).
IoReady wait_for_io(const AmqpConnection* connection, int wakeup_fd,
                    std::chrono::milliseconds timeout);

// How a pass over the socket ends once it has read at least one frame.
enum class PassEnd {
  // Asks rabbitmq-c for one more frame: a recv that finds the socket empty and a zero-timeout
  // poll, which is also where rabbitmq-c sends a heartbeat that is due and notices a silent peer.
  ask_socket,
  // Stops when rabbitmq-c holds no more bytes or frames: what the kernel still holds keeps the
  // socket readable, so the next poll returns at once (issue 17: two failed system calls saved
  // on most turns). The caller still asks the socket at least every wake-up interval.
  buffer_empty,
};

// Calls `on_frame` for every frame rabbitmq-c can give without blocking (heartbeats are
// handled inside). A pass that reads no frame always asks the socket. A frame's memory is
// recycled once `on_frame` returns: it copies what it keeps. Throws ConnectionLost when the
// connection fails.
template <class OnFrame>
void read_available_frames(AmqpConnection& connection, PassEnd end, OnFrame&& on_frame);

}  // namespace warren::broker

#include "broker/io_wait_inl.h"
