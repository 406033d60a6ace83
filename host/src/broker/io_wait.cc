// See io_wait.h.
#include "broker/io_wait.h"

#include <poll.h>

#include <algorithm>

namespace warren::broker {

std::chrono::milliseconds wakeup_interval(std::chrono::milliseconds heartbeat) {
  if (heartbeat.count() <= 0)
    return kMaxWakeupInterval;
  return std::max(std::chrono::milliseconds(1), std::min(kMaxWakeupInterval, heartbeat / 4));
}

IoReady wait_for_io(const AmqpConnection* connection, int wakeup_fd,
                    std::chrono::milliseconds timeout) {
  if (connection != nullptr &&
      (amqp_frames_enqueued(connection->state()) || amqp_data_in_buffer(connection->state()))) {
    return IoReady{.wakeup = false, .socket = true};
  }
  pollfd fds[2]{};
  nfds_t count = 0;
  fds[count++] = pollfd{wakeup_fd, POLLIN, 0};
  if (connection != nullptr && connection->fd() >= 0) {
    fds[count++] = pollfd{connection->fd(), POLLIN, 0};
  }
  if (::poll(fds, count, static_cast<int>(std::max<std::int64_t>(0, timeout.count()))) <= 0)
    return IoReady{};
  return IoReady{.wakeup = (fds[0].revents & POLLIN) != 0,
                 .socket = count > 1 && fds[1].revents != 0};
}

}  // namespace warren::broker
