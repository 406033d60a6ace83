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

// `connection` may be null (disconnected: only the wakeup fd and the timeout count).
void wait_for_io(const AmqpConnection* connection, int wakeup_fd,
                 std::chrono::milliseconds timeout);

// Calls `on_frame` for every frame rabbitmq-c can give without blocking (heartbeats are
// handled inside). Throws ConnectionLost when the connection fails.
template <class OnFrame>
void read_available_frames(AmqpConnection& connection, OnFrame&& on_frame);

}  // namespace warren::broker

#include "broker/io_wait_inl.h"
