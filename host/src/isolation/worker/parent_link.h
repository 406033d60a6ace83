// The worker process's side of its socket. Whichever thread needs a frame reads the socket
// itself, one at a time: the main thread while it waits for work (a Deliver, Shutdown) or for an
// answer its handler asked for (PublishResult, MetricDeclared), so a message costs one blocking
// recv() and no hand-over between threads. A handler that runs long cannot read, so a watcher
// thread takes the socket over once one has run for kTakeOver: it answers Ping, notes Cancel and
// keeps the rest for the main thread, until the handler has returned. Any reader answers a Ping
// at once. Sends are serialised by a lock.
//
// Outcomes may be held and sent together (held_frames.h): after a handler that ran under
// kHoldRunsUnder, while more than twice as many Delivers wait as outcomes are held (a window
// goes back in about three parts, so the host refills it before it runs dry), the outcome waits
// for the next ones; the log lines and metric records of a young run wait with it, in order.
// Nothing is held while the watcher has the socket. Whatever is held goes out before the main
// thread blocks, before any frame that expects an answer, before a
// Deliver the host marked report_at_once, at kMaxHeld outcomes, and (the watcher) once the
// oldest has waited kHoldAtMost: a slow handler never keeps the host from earlier outcomes for
// longer. A fatal signal sends them too (flush_on_fatal_signals).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "isolation/frame_socket.h"
#include "isolation/worker/held_frames.h"

namespace warren::isolation {

class ParentLink {
 public:
  // How long a handler runs before the watcher reads for it: well under the host's ping
  // interval (1 s), so a busy child still answers pings and sees a Cancel in time.
  static constexpr std::chrono::milliseconds kTakeOver{50};
  // Holding outcomes: only after handlers this fast (a slow one costs far more than the host's
  // wake-up), at most this many, at most this long (while the child is busy; the watcher ticks
  // at kTakeOver when it is idle).
  static constexpr std::chrono::microseconds kHoldRunsUnder{500};
  static constexpr std::size_t kMaxHeld = 64;
  static constexpr std::chrono::milliseconds kHoldAtMost{5};

  explicit ParentLink(FrameSocket socket) : socket_(std::move(socket)) {}
  ParentLink(const ParentLink&) = delete;
  ParentLink& operator=(const ParentLink&) = delete;
  ~ParentLink();

  // Before start_reader(): one frame read on the caller's thread (the Start frame).
  std::optional<Frame> receive_first(std::chrono::milliseconds timeout);
  // Starts the watcher thread.
  void start_reader();

  // Sends FRAME now, after anything held. false when the host is gone; the caller then ends.
  bool send(const Frame& frame);
  // A frame that expects no answer (LogLine, MetricRecord): held with the outcome of the run in
  // progress while it is young (kHoldRunsUnder), else sent now.
  void post(const Frame& frame);
  // The main thread's handler of MESSAGE is done (it ran RAN_FOR): its outcome, sent now or held
  // (see above). false when the host is gone.
  bool finish_run(const Deliver& message, host_abi::ReportedOutcome outcome,
                  std::chrono::nanoseconds ran_for);
  // Installs handlers of the fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) that send
  // what is held, then let the signal kill the process as it would have (the host names it).
  // One link per process.
  void flush_on_fatal_signals();

  // The next Deliver or Shutdown; std::nullopt once the host is gone. Called by the main thread
  // only; calling it says the previous handler has returned, returning a Deliver that the next
  // one runs (the watcher reads for it if it runs long).
  std::optional<Frame> next_work();
  // The handler of SEQUENCE asks for a publish; waits for the host's answer (std::nullopt:
  // confirmed). The host gone: "the host is gone".
  std::optional<std::string> publish(std::uint64_t sequence, OutgoingMessage message);
  // Declares a metric and waits for the verdict: empty, accepted; else the refusal.
  std::string declare_metric(MetricDeclare declaration);
  // Whether the host sent Cancel for SEQUENCE (its soft_timeout passed).
  bool cancelled(std::uint64_t sequence) const;

 private:
  // Waits, reading the socket when no other thread does, until DONE() (under mutex_) or the host
  // is gone. LOCK holds mutex_.
  template <typename Done>
  void read_until(std::unique_lock<std::mutex>& lock, Done done);
  // Reads one frame (without mutex_, holding the reader's turn) and files it; the host gone or
  // garbage: host_gone_. LOCK holds mutex_ on entry and on return.
  void read_one(std::unique_lock<std::mutex>& lock);
  // Reads and files every frame readable now, without waiting (none if another thread reads).
  void read_available(std::unique_lock<std::mutex>& lock);
  // One frame from the socket, waiting or not; answers a Ping at once. Without mutex_.
  FrameSocket::Status receive(Frame& frame, bool wait);
  // Files what receive() got. Under mutex_.
  void file(FrameSocket::Status status, Frame&& frame);
  // Sends whatever is held.
  bool flush();
  // Whether more than twice HELD Delivers wait (reading what is readable first).
  bool more_work_than(std::size_t held);
  void watch_loop();
  // Waits until ANSWERS holds KEY or the host is gone; takes the answer out.
  template <typename Answer>
  std::optional<Answer> await(std::map<std::uint64_t, Answer>& answers, std::uint64_t key);

  FrameSocket socket_;
  std::mutex send_mutex_;
  HeldFrames held_;  // under send_mutex_
  // When the main thread's handler run began (steady_clock ticks), 0 between runs: post() holds
  // only early in a run.
  std::atomic<std::chrono::steady_clock::rep> in_run_since_ns_{0};
  std::thread watcher_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;       // a frame was filed or the reader's turn is free
  std::condition_variable watcher_wake_;  // only at the end: the watcher otherwise just ticks
  std::deque<Frame> work_;
  // read_available()'s frames, read without the lock before they are filed; only the thread
  // that is reading_ touches it.
  std::vector<std::pair<FrameSocket::Status, Frame>> read_without_lock_;
  std::size_t delivers_waiting_ = 0;  // the Delivers in work_
  std::map<std::uint64_t, PublishResult> publish_results_;
  std::map<std::uint64_t, MetricDeclared> metric_verdicts_;
  std::uint64_t cancelled_up_to_ = 0;
  std::uint64_t next_request_ = 1;
  bool reading_ = false;       // one thread's turn to read the socket
  std::uint64_t running_ = 0;  // the handler run in progress (numbered), 0 between them
  std::chrono::steady_clock::time_point run_started_{};
  std::uint64_t runs_ = 0;
  bool host_gone_ = false;
  bool closing_ = false;
};

}  // namespace warren::isolation
