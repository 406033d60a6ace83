// See io_loop.h.
#include "broker/io_loop.h"

#include <amqp_framing.h>

#include <cassert>
#include <stdexcept>

#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/io_wait.h"
#include "transport/ids.h"

namespace warren::broker {
namespace {

using Clock = std::chrono::steady_clock;

// /healthz reports an I/O loop stalled after this long without a turn (it turns at least every
// wake-up interval, so this is a thread stuck in a library call).
constexpr auto kLoopStallAllowance = std::chrono::seconds(10);

std::size_t endpoint_count(const IoLoopOptions& options, const IoLoopNames& names) {
  if (options.endpoints.empty())
    throw std::invalid_argument(names.loop + ": no broker endpoint to connect to");
  return options.endpoints.size();
}

}  // namespace

IoLoop::IoLoop(IoLoopOptions options, IoLoopNames names, observability::Health* health)
    : options_(std::move(options)),
      names_(std::move(names)),
      rotation_(endpoint_count(options_, names_)),
      backoff_(transport::reconnect_policy(options_.reconnect_initial, options_.reconnect_max)),
      wakeup_interval_(wakeup_interval(options_.connection.heartbeat)) {
  if (health != nullptr)
    heartbeat_ = health->register_loop(names_.loop, kLoopStallAllowance);
}

IoLoop::~IoLoop() {
  assert(!thread_.joinable() && "the subclass's destructor must stop_loop()");
}

void IoLoop::start_loop() {
  if (!thread_.joinable())
    thread_ = std::thread([this] { run(); });
}

void IoLoop::stop_loop() {
  stopping_ = true;
  wakeup_.signal();
  if (thread_.joinable())
    thread_.join();
}

void IoLoop::drop_connection() noexcept {
  std::lock_guard lock(connection_mutex_);
  connection_.reset();
  connected_ = false;
}

void IoLoop::close_connection() noexcept {
  // Not under connection_mutex_: the handshake may hang on a socket the broker no longer reads,
  // and abort_socket_if() (which takes the mutex) is what cuts it short. Only this thread
  // replaces connection_, so reading it here needs no lock.
  if (connection_)
    connection_->close();
  drop_connection();
}

std::chrono::milliseconds IoLoop::schedule_reconnect() {
  const auto delay = backoff_.next(transport::random_unit());
  next_connect_attempt_ = Clock::now() + delay;
  return delay;
}

void IoLoop::run() {
  const auto interval = wakeup_interval_;
  while (!stopping_.load() && !finished_) {
    if (heartbeat_)
      heartbeat_->tick();
    service_commands();
    if (finished_)
      break;
    if (!connection_) {
      if (wants_connection() && Clock::now() >= next_connect_attempt_)
        connect();
      if (!connection_) {
        if (wait(interval).wakeup)
          wakeup_.drain();
        continue;
      }
    }
    try {
      service_connection();
    } catch (const ConnectionLost& e) {
      on_connection_lost(e.what());
      continue;
    }
    const IoReady ready = wait(interval);
    if (ready.wakeup)
      wakeup_.drain();
    socket_ready_ = ready.socket;
  }
  on_loop_exit();
  drop_connection();
  if (heartbeat_)
    heartbeat_->retire();
}

IoReady IoLoop::wait(std::chrono::milliseconds interval) {
  wakeup_.may_sleep();  // before the look at the queues: a push from now on signals
  const auto timeout = commands_waiting() ? std::chrono::milliseconds(0) : interval;
  const IoReady ready = wait_for_io(connection_.get(), wakeup_.fd(), timeout);
  wakeup_.awake();
  return ready;
}

void IoLoop::set_credentials(std::string user, std::string password) {
  std::lock_guard lock(credentials_mutex_);
  credentials_.emplace(std::move(user), std::move(password));
}

void IoLoop::connect() {
  BrokerEndpoint endpoint = options_.endpoints[rotation_.current()];
  {
    std::lock_guard lock(credentials_mutex_);
    if (credentials_) {
      if (!credentials_->first.empty())
        endpoint.user = credentials_->first;
      endpoint.password = credentials_->second;
    }
  }
  std::string why;
  bool refused = false;
  try {
    auto fresh = AmqpConnection::open(endpoint, options_.connection);
    prepare_connection(*fresh);
    {
      std::lock_guard lock(connection_mutex_);
      connection_ = std::move(fresh);
    }
    socket_ready_ = true;  // the first turn reads whatever came with the setup
    connected_ = true;
    on_connected();
    return;
  } catch (const TopologyError& e) {
    why = e.what();
    refused = true;
  } catch (const ConnectionLost& e) {
    why = e.what();
    advance_endpoint();
  }
  drop_connection();
  on_connect_failed(why, refused, schedule_reconnect());
}

void IoLoop::read_frames() {
  auto end = PassEnd::buffer_empty;
  if (const auto now = Clock::now(); now >= next_socket_check_) {
    end = PassEnd::ask_socket;
    next_socket_check_ = now + wakeup_interval_;
  } else if (!socket_ready_ && !amqp_frames_enqueued(connection_->state()) &&
             !amqp_data_in_buffer(connection_->state())) {
    return;  // woken by the wakeup fd alone: the socket has nothing
  }
  read_available_frames(*connection_, end, [this](const amqp_frame_t& frame) { dispatch(frame); });
}

void IoLoop::dispatch(const amqp_frame_t& frame) {
  if (frame.frame_type == AMQP_FRAME_METHOD) {
    const amqp_method_t& method = frame.payload.method;
    if (method.id == AMQP_CONNECTION_CLOSE_METHOD) {
      const auto* close = static_cast<const amqp_connection_close_t*>(method.decoded);
      amqp_connection_close_ok_t ok{};
      amqp_send_method(connection_->state(), 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      throw ConnectionLost("the broker closed the " + names_.connection + ": " +
                           string_of(close->reply_text));
    }
    if (method.id == AMQP_CHANNEL_CLOSE_METHOD) {
      const auto* close = static_cast<const amqp_channel_close_t*>(method.decoded);
      on_channel_closed(frame.channel, close->reply_code, string_of(close->reply_text));
      return;
    }
  }
  on_frame(frame);
}

}  // namespace warren::broker
