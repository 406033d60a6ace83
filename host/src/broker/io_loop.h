// What the consuming and the publishing connection share: one I/O thread that owns one AMQP
// connection at a time. The loop connects (the endpoints in turn: after a failed connect or a
// lost connection the next one, so that the others are tried before the one that failed,
// endpoint_rotation.h; each failure followed by a reconnect after the shared backoff), logs in,
// services heartbeats by never sleeping longer than the wake-up interval (io_wait.h), wakes at once
// when another thread queues work (the wake-up fd), reads every frame that arrived and dispatches
// it, and on leaving closes or abandons the connection.
//
// Connection-level state lives here: the AmqpConnection, the next endpoint, the backoff, the
// loop's liveness for /healthz. Channel-level state (subscriptions and their delivery tags, the
// confirm channel and its sequence numbers) lives in the subclasses, which the loop calls
// through the hooks below; a channel.close reaches them as a channel event, not as the loss of
// the connection, so a channel can be recovered on its own.
#pragma once

#include <amqp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/broker_endpoint.h"
#include "broker/channel_numbers.h"
#include "broker/endpoint_rotation.h"
#include "broker/io_wait.h"
#include "broker/wakeup_queue.h"
#include "observability/health.h"
#include "transport/backoff.h"

namespace warren::broker {

// Work the I/O thread does between its turns (issue 17: running handlers itself, which costs
// less than a hand-over to another thread). Meanwhile the loop is lent: a stand-in thread takes
// it over when the help has lasted longer than a tick (a few milliseconds), so that heartbeats,
// settlements and other channels' deliveries wait no longer than that, and gives it back when the
// help is done. Only one of the two threads runs turns at a time; the stand-in never helps.
class LoopHelper {
 public:
  virtual ~LoopHelper() = default;
  // After a turn, on the I/O thread, with the loop still held: whether there is help to give.
  virtual bool begin_help() = 0;
  // Then, with the loop lent: gives it. `enough()` turns true once the stand-in has taken the
  // loop over; the helper should then stop at the next chance.
  virtual void help(const std::function<bool()>& enough) = 0;
  // On the stand-in, as it takes the loop over: whatever waits for the helper should be woken
  // for other threads to take.
  virtual void stood_in() = 0;
};

// What both connections are given (ConsumerOptions and PublisherOptions add their own).
struct IoLoopOptions {
  std::vector<BrokerEndpoint> endpoints;  // tried in turn (endpoint_rotation.h)
  ConnectionOptions connection;
  std::chrono::milliseconds reconnect_initial{500};
  std::chrono::milliseconds reconnect_max{30000};
};

// How a loop names itself in /healthz and in its log lines.
struct IoLoopNames {
  std::string loop;        // "broker consumer I/O"
  std::string connection;  // "connection", "publishing connection"
};

class IoLoop {
 public:
  IoLoop(const IoLoop&) = delete;
  IoLoop& operator=(const IoLoop&) = delete;

  // Connected to a broker now (from any thread).
  bool connected() const noexcept { return connected_.load(); }
  // From any thread: the user (empty: each endpoint's own) and password of the next connections
  // (a reload with a rotated password); the current connection is kept.
  void set_credentials(std::string user, std::string password);

 protected:
  // Throws std::invalid_argument without endpoints. `health` may be null.
  IoLoop(IoLoopOptions options, IoLoopNames names, observability::Health* health);
  // Subclasses call stop_loop() in their destructor: the loop calls their hooks until joined.
  virtual ~IoLoop();

  // Starts the I/O thread (once).
  void start_loop();
  // Asks the loop to leave and joins it; not from the I/O thread. Idempotent.
  void stop_loop();
  // The same, except that it returns without joining when the loop has ended but its thread is
  // still helping (LoopHelper): in a handler that outlived the host's shutdown timeout, which
  // the host leaves running as it exits. The destructor's stop_loop() joins it.
  void stop_loop_unless_helping();
  bool loop_started() const noexcept { return thread_.joinable(); }
  bool stop_requested() const noexcept { return stopping_.load(); }
  // Shared with the subclass's WakeupQueue: a push wakes the loop.
  Wakeup& wakeup() noexcept { return wakeup_; }
  // Before start_loop(); `helper` outlives the loop (LoopHelper above).
  void set_helper(LoopHelper* helper) noexcept { helper_ = helper; }
  // Whether the turn running now runs on the stand-in (its deliveries go to other threads).
  bool standing_in() const noexcept { return standing_in_; }

  // From any thread: unblocks a thread stuck in a socket call on the current connection when
  // `still_stuck()` holds, checked while no other thread can swap the connection.
  template <class StillStuck>
  bool abort_socket_if(StillStuck&& still_stuck) {
    std::lock_guard lock(connection_mutex_);
    if (!connection_ || !still_stuck())
      return false;
    connection_->abort_socket();
    return true;
  }

  // I/O thread only, from here on.
  AmqpConnection* connection() const noexcept { return connection_.get(); }
  // Leave the loop after this turn.
  void finish_loop() noexcept { finished_ = true; }
  // No close handshake (the peer may be gone): the broker requeues what is unacked.
  void drop_connection() noexcept;
  // connection.close with a short deadline, then drop.
  void close_connection() noexcept;
  // The current endpoint failed (its connection was lost): the next connect tries the next one,
  // and this one only after all the others (failover).
  void advance_endpoint() noexcept { rotation_.failed(); }
  // The next connect waits for the backoff; returns how long.
  std::chrono::milliseconds schedule_reconnect();
  void reset_backoff() noexcept { backoff_.reset(); }
  // Dispatches every frame available now: connection.close is answered and thrown as
  // ConnectionLost, channel.close goes to on_channel_closed(), the rest to on_frame(). A pass
  // ends when rabbitmq-c's buffer is empty, and a turn that the poll found the socket quiet
  // does not read at all, except once every wake-up interval: then it asks the socket once more,
  // so that rabbitmq-c sends a heartbeat that is due and notices a silent peer (io_wait.h).
  void read_frames();

  // --- Hooks, called on the I/O thread ---
  // Every turn, connected or not, before anything else (take queued commands, expire deadlines).
  virtual void service_commands() = 0;
  // Whether other threads queued work since service_commands() took it (the loop then does not
  // sleep: a push while the loop is awake does not signal, wakeup_queue.h).
  virtual bool commands_waiting() const = 0;
  // Whether to connect when disconnected.
  virtual bool wants_connection() const { return true; }
  // A new connection, not yet adopted: open channels, declare. Throws ConnectionLost, or
  // TopologyError when the broker refuses a declaration.
  virtual void prepare_connection(AmqpConnection& connection) = 0;
  // The connection is adopted (connection() is set). Throws ConnectionLost.
  virtual void on_connected() = 0;
  // A connect failed (`refused`: TopologyError; else ConnectionLost), the connection is dropped
  // and the next attempt is in `retry_in`.
  virtual void on_connect_failed(const std::string& why, bool refused,
                                 std::chrono::milliseconds retry_in) = 0;
  // Every turn while connected: send what is queued, read_frames(). Throws ConnectionLost.
  virtual void service_connection() = 0;
  // A frame for a channel (deliveries, confirms, returns, cancels, blocked). Throws ConnectionLost.
  virtual void on_frame(const amqp_frame_t& frame) = 0;
  // The broker closed `channel` (the channel is unusable; the connection is not lost yet).
  virtual void on_channel_closed(ChannelNumber channel, int reply_code,
                                 const std::string& reply_text) = 0;
  // The connection failed (ConnectionLost from a hook): drop it, forget its channels.
  virtual void on_connection_lost(const std::string& why) = 0;
  // The loop is leaving (stop_loop() or finish_loop()); the connection is dropped afterwards.
  virtual void on_loop_exit() = 0;

 private:
  // How a turn ended: leave the loop, turn again at once, or wait for the socket or a wake-up
  // (`wait_connected`: the socket's readiness counts for the next read).
  enum class TurnEnd { leave, again, wait_unconnected, wait_connected };
  void run();
  // One turn, up to the wait; then rest() waits.
  TurnEnd serve();
  void rest(TurnEnd end);
  // The I/O thread's help (LoopHelper), with the loop lent to the stand-in meanwhile; `role`
  // is the loop's role, held before and after.
  void help_with_loop_lent(std::unique_lock<std::mutex>& role);
  // The stand-in thread: watches the lends, takes the loop over one that lasted a tick.
  void stand_in();
  void cover_for_helper();
  void stop_stand_in();
  // Polls (io_wait.h) up to `interval`, not at all when commands are waiting.
  IoReady wait(std::chrono::milliseconds interval);
  void connect();
  void dispatch(const amqp_frame_t& frame);

  const IoLoopOptions options_;
  const IoLoopNames names_;
  std::shared_ptr<observability::LoopHeartbeat> heartbeat_;
  Wakeup wakeup_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> connected_{false};

  // I/O thread state.
  std::unique_ptr<AmqpConnection> connection_;
  std::mutex connection_mutex_;  // guards connection_ swaps against abort_socket_if()
  std::mutex credentials_mutex_;
  std::optional<std::pair<std::string, std::string>> credentials_;  // set_credentials()
  bool finished_ = false;
  EndpointRotation rotation_;
  transport::Backoff backoff_;
  std::chrono::steady_clock::time_point next_connect_attempt_{};
  const std::chrono::milliseconds wakeup_interval_;
  std::chrono::steady_clock::time_point next_socket_check_{};  // read_frames(): PassEnd
  bool socket_ready_ = true;  // the last wait_for_io() found the socket readable

  std::thread thread_;

  // Helping (LoopHelper). The role: held by whichever thread runs turns, which makes the I/O
  // thread state above the stand-in's while it covers.
  LoopHelper* helper_ = nullptr;
  std::mutex role_mutex_;
  bool standing_in_ = false;             // role state
  std::atomic<bool> lent_{false};        // the I/O thread is helping; the role is free to take
  std::atomic<std::uint64_t> lends_{0};  // lends so far: a lend the stand-in saw twice is long
  std::atomic<bool> covering_{false};    // the stand-in holds the role during a lend
  std::mutex stand_in_mutex_;
  std::condition_variable stand_in_cv_;
  std::atomic<bool> stand_in_parked_{false};  // asleep until the next lend
  bool stand_in_stop_ = false;                // under stand_in_mutex_
  std::thread stand_in_thread_;               // started at the first lend

  // stop_loop_unless_helping(): the I/O thread has left run(), or the loop ended (stopped or
  // finished on the stand-in) while the I/O thread was lent.
  std::mutex exit_mutex_;
  std::condition_variable exit_cv_;
  bool exited_ = false;
  bool ended_while_lent_ = false;
};

}  // namespace warren::broker
