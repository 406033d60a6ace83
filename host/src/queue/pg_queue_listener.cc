// See pg_queue_listener.h.
#include "queue/pg_queue_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "observability/log.h"
#include "postgres/pg_connection.h"

namespace warren::queue {
namespace {

using namespace std::chrono_literals;

// Between two attempts to connect while the server is unreachable.
constexpr auto kReconnectDelay = 2s;

}  // namespace

PgQueueListener::PgQueueListener(Options options, std::function<void()> wake)
    : options_(std::move(options)), wake_(std::move(wake)) {
  if (::pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2 for the queue listener");
  thread_ = std::thread([this] { run(); });
}

PgQueueListener::~PgQueueListener() {
  const char byte = 1;
  [[maybe_unused]] const auto written = ::write(stop_pipe_[1], &byte, 1);
  if (thread_.joinable())
    thread_.join();
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

void PgQueueListener::run() {
  bool reported = false;
  for (;;) {
    bool stop = false;
    try {
      stop = listen_once();
      reported = false;
    } catch (const postgres::PgError& e) {
      if (!reported) {
        observability::log_warn(std::string("postgres queue: the listener for new rows lost its "
                                            "connection (rows are found by polling meanwhile): ") +
                                e.what());
        reported = true;
      }
    } catch (const std::exception& e) {
      observability::log_error(std::string("postgres queue: the listener for new rows failed: ") +
                               e.what());
    }
    if (stop || stopped_while_waiting(-1, kReconnectDelay))
      return;
  }
}

bool PgQueueListener::listen_once() {
  postgres::PgConnection connection(postgres::PgConnectOptions{
      options_.dsn, options_.application_name,
      std::chrono::duration_cast<std::chrono::seconds>(options_.connect_timeout)});
  connection.exec("LISTEN warren_queue");
  // Whatever was inserted while this listener was not connected.
  wake_();
  for (;;) {
    // A wait with a bound, so that a connection that died without a FIN is noticed by the
    // keepalives libpq set (consume_input then throws).
    if (stopped_while_waiting(connection.socket(), 30s))
      return true;
    connection.consume_input();
    if (!connection.take_notifications().empty())
      wake_();
  }
}

bool PgQueueListener::stopped_while_waiting(int fd, std::chrono::milliseconds timeout) {
  pollfd fds[2] = {{stop_pipe_[0], POLLIN, 0}, {fd, POLLIN, 0}};
  const int count = fd >= 0 ? 2 : 1;
  const int ready = ::poll(fds, static_cast<nfds_t>(count), static_cast<int>(timeout.count()));
  if (ready > 0 && (fds[0].revents & POLLIN) != 0)
    return true;  // stop
  return false;
}

}  // namespace warren::queue
