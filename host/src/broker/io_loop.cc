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

// The stand-in (LoopHelper) looks at the lends this often, and takes the loop over one it saw at
// two looks in a row: a helper away from the loop longer than one or two ticks. After this many
// ticks without a lend it sleeps until the next (an idle host does not tick).
constexpr auto kStandInTick = std::chrono::milliseconds(2);
constexpr int kStandInParkAfter = 250;

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

void IoLoop::stop_loop_unless_helping() {
  stopping_ = true;
  wakeup_.signal();
  if (!thread_.joinable())
    return;
  {
    std::unique_lock lock(exit_mutex_);
    exit_cv_.wait(lock, [&] { return exited_ || ended_while_lent_; });
    if (!exited_)
      return;  // still in a handler: joined by stop_loop() later, or left to the exiting host
  }
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
  std::unique_lock role(role_mutex_);
  while (!stopping_.load() && !finished_) {
    const TurnEnd end = serve();
    if (end == TurnEnd::leave)
      break;
    // Also after a lost connection: what the pass read before it was lost waits for the help.
    if (helper_ != nullptr && helper_->begin_help())
      help_with_loop_lent(role);
    if (stopping_.load() || finished_)
      break;
    rest(end);
  }
  on_loop_exit();
  drop_connection();
  if (heartbeat_)
    heartbeat_->retire();
  role.unlock();
  stop_stand_in();
  std::lock_guard lock(exit_mutex_);
  exited_ = true;
  exit_cv_.notify_all();
}

IoLoop::TurnEnd IoLoop::serve() {
  if (heartbeat_)
    heartbeat_->tick();
  service_commands();
  if (finished_)
    return TurnEnd::leave;
  if (!connection_) {
    if (wants_connection() && Clock::now() >= next_connect_attempt_)
      connect();
    if (!connection_)
      return TurnEnd::wait_unconnected;
  }
  try {
    service_connection();
  } catch (const ConnectionLost& e) {
    on_connection_lost(e.what());
    return TurnEnd::again;
  }
  return TurnEnd::wait_connected;
}

void IoLoop::rest(TurnEnd end) {
  if (end == TurnEnd::again || end == TurnEnd::leave)
    return;
  const IoReady ready = wait(wakeup_interval_);
  if (ready.wakeup)
    wakeup_.drain();
  if (end == TurnEnd::wait_connected)
    socket_ready_ = ready.socket;
}

void IoLoop::help_with_loop_lent(std::unique_lock<std::mutex>& role) {
  if (!stand_in_thread_.joinable())
    stand_in_thread_ = std::thread([this] { stand_in(); });
  lends_.fetch_add(1);
  lent_.store(true);
  if (stand_in_parked_.load()) {
    std::lock_guard lock(stand_in_mutex_);
    stand_in_cv_.notify_one();
  }
  role.unlock();
  helper_->help([this] { return covering_.load(std::memory_order_relaxed); });
  lent_.store(false);
  // A stand-in covering may be asleep in its poll: cut it short. (It sets covering_ before it
  // looks at lent_, this thread clears lent_ before it looks at covering_: one of the two sees
  // the other.)
  if (covering_.load())
    wakeup_.signal();
  role.lock();
}

void IoLoop::stand_in() {
  std::uint64_t seen = 0;  // the lend seen at the last tick
  int quiet_ticks = 0;
  std::unique_lock lock(stand_in_mutex_);
  while (!stand_in_stop_) {
    if (!lent_.load()) {
      seen = 0;
      if (++quiet_ticks < kStandInParkAfter) {
        stand_in_cv_.wait_for(lock, kStandInTick, [this] { return stand_in_stop_; });
        continue;
      }
      // No help for a while (an idle host): sleep until the next lend wakes it.
      stand_in_parked_.store(true);
      stand_in_cv_.wait(lock, [this] { return stand_in_stop_ || lent_.load(); });
      stand_in_parked_.store(false);
    }
    quiet_ticks = 0;
    const std::uint64_t lend = lends_.load();
    if (lend != seen) {
      seen = lend;
      stand_in_cv_.wait_for(lock, kStandInTick, [this] { return stand_in_stop_; });
      continue;
    }
    // The same lend a whole tick later: take the loop over until the helper is back.
    lock.unlock();
    cover_for_helper();
    lock.lock();
  }
}

void IoLoop::cover_for_helper() {
  std::unique_lock role(role_mutex_, std::try_to_lock);
  if (!role.owns_lock())
    return;  // the I/O thread is back already
  covering_.store(true);
  if (lent_.load() && !stopping_.load() && !finished_) {
    standing_in_ = true;
    helper_->stood_in();
    while (lent_.load() && !stopping_.load() && !finished_) {
      const TurnEnd end = serve();
      if (end == TurnEnd::leave || !lent_.load())
        break;
      rest(end);
    }
    standing_in_ = false;
  }
  if (stopping_.load() || finished_) {
    std::lock_guard lock(exit_mutex_);
    ended_while_lent_ = true;
    exit_cv_.notify_all();
  }
  covering_.store(false);
}

void IoLoop::stop_stand_in() {
  {
    std::lock_guard lock(stand_in_mutex_);
    stand_in_stop_ = true;
  }
  stand_in_cv_.notify_all();
  if (stand_in_thread_.joinable())
    stand_in_thread_.join();
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
