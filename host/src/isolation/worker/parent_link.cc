#include "isolation/worker/parent_link.h"

#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdlib>

#include "isolation/frame_codec.h"

namespace warren::isolation {

namespace {
// A send to the host waits this long for room: the host reads continuously, so only a host
// that is stuck (or gone) takes longer, and then this child has no one to work for.
constexpr std::chrono::seconds kSendTimeout{30};

using Clock = std::chrono::steady_clock;

// The link whose held frames a fatal signal sends (one per process).
std::atomic<const HeldFrames*> signal_held{nullptr};
std::atomic<int> signal_fd{-1};
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

extern "C" void send_held_then_die(int signal) {
  if (const HeldFrames* held = signal_held.load())
    held->send_from_signal(signal_fd.load());
  // SA_RESETHAND put the default action back: raised again, the signal kills the process as it
  // would have, and the host's waitid() names it (a fault's instruction would also fault again).
  ::raise(signal);
}
}  // namespace

ParentLink::~ParentLink() {
  {
    std::lock_guard lock(send_mutex_);
    held_.send(socket_, kSendTimeout);  // e.g. a Shutdown read while outcomes were held
  }
  if (watcher_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    watcher_wake_.notify_all();
    changed_.notify_all();                // the watcher may wait for the main thread's read to end
    ::shutdown(socket_.fd(), SHUT_RDWR);  // ends a recv() the watcher may be in
    watcher_.join();
  }
  if (signal_held.load() == &held_)
    signal_held.store(nullptr);
}

std::optional<Frame> ParentLink::receive_first(std::chrono::milliseconds timeout) {
  return socket_.receive_within(timeout);
}

void ParentLink::start_reader() {
  watcher_ = std::thread([this] { watch_loop(); });
}

void ParentLink::flush_on_fatal_signals() {
  signal_fd.store(socket_.fd());
  signal_held.store(&held_);
  // A stack overflow faults with no stack left to run a handler on: give it one of its own.
  static char alternate_stack[64 * 1024];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof(alternate_stack);
  ::sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = send_held_then_die;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signal : kFatalSignals)
    ::sigaction(signal, &action, nullptr);
}

bool ParentLink::send(const Frame& frame) {
  std::lock_guard lock(send_mutex_);
  if (held_.empty())
    return socket_.send(frame, kSendTimeout);
  held_.keep(frame, false);
  return held_.send(socket_, kSendTimeout);
}

void ParentLink::post(const Frame& frame) {
  // Held only from a run that may still be fast: a line logged later goes now, so that a handler
  // that runs long is not logged only when it ends.
  const auto started =
      Clock::time_point(Clock::duration(in_run_since_ns_.load(std::memory_order_relaxed)));
  if (started == Clock::time_point() || Clock::now() - started >= kHoldRunsUnder) {
    send(frame);
    return;
  }
  std::lock_guard lock(send_mutex_);
  held_.keep(frame, false);
}

bool ParentLink::flush() {
  std::lock_guard lock(send_mutex_);
  return held_.send(socket_, kSendTimeout);
}

bool ParentLink::finish_run(const Deliver& message, host_abi::ReportedOutcome outcome,
                            std::chrono::nanoseconds ran_for) {
  in_run_since_ns_.store(0, std::memory_order_relaxed);
  Outcome frame{message.sequence, std::move(outcome), static_cast<std::uint64_t>(ran_for.count())};
  std::size_t held;
  {
    std::lock_guard lock(send_mutex_);
    held_.keep(frame, true);
    held = held_.outcomes();
  }
  const bool hold = !message.report_at_once && ran_for < kHoldRunsUnder && held < kMaxHeld &&
                    more_work_than(held);
  return hold ? !socket_.closed() : flush();
}

bool ParentLink::more_work_than(std::size_t held) {
  std::unique_lock lock(mutex_);
  // The watcher reads for a handler that ran long and may sit in recv() until a frame comes:
  // it could not send what is held on time, so nothing is held while it has the socket.
  if (reading_)
    return false;
  if (delivers_waiting_ <= 2 * held)
    read_available(lock);  // what the host sent since may be enough
  return delivers_waiting_ > 2 * held && !host_gone_;
}

FrameSocket::Status ParentLink::receive(Frame& frame, bool wait) {
  FrameSocket::Status status;
  try {
    status = wait ? socket_.receive_waiting(frame, FrameSocket::kForever) : socket_.receive(frame);
  } catch (const FrameError&) {
    status = FrameSocket::Status::closed;  // a host that sends garbage is not one to serve
  }
  if (status == FrameSocket::Status::frame) {
    if (const auto* ping = std::get_if<Ping>(&frame))
      send(Pong{ping->nonce});  // at once, whoever reads it
  }
  return status;
}

void ParentLink::file(FrameSocket::Status status, Frame&& frame) {
  if (status == FrameSocket::Status::closed) {
    host_gone_ = true;
  } else if (status == FrameSocket::Status::frame) {
    if (const auto* cancel = std::get_if<Cancel>(&frame)) {
      cancelled_up_to_ = std::max(cancelled_up_to_, cancel->sequence);
    } else if (auto* result = std::get_if<PublishResult>(&frame)) {
      publish_results_[result->request] = std::move(*result);
    } else if (const auto* verdict = std::get_if<MetricDeclared>(&frame)) {
      metric_verdicts_[verdict->metric] = *verdict;
    } else if (!std::holds_alternative<Ping>(frame)) {
      if (std::holds_alternative<Deliver>(frame))
        ++delivers_waiting_;
      work_.push_back(std::move(frame));  // Deliver, Shutdown; anything else the main loop refuses
    }
  }
}

void ParentLink::read_one(std::unique_lock<std::mutex>& lock) {
  reading_ = true;
  lock.unlock();
  Frame frame;
  const FrameSocket::Status status = receive(frame, true);
  lock.lock();
  reading_ = false;
  file(status, std::move(frame));
  // No waiter (the usual case: the main thread reads for itself) costs no system call here.
  changed_.notify_all();
}

void ParentLink::read_available(std::unique_lock<std::mutex>& lock) {
  if (reading_ || host_gone_)
    return;
  reading_ = true;
  lock.unlock();
  std::vector<std::pair<FrameSocket::Status, Frame>>& read = read_without_lock_;
  // One packet (a batch of the host's frames) at most: another recv() would mostly fail, a
  // system call for nothing after every message that finds the window empty; what comes later
  // is read the next time.
  while (true) {
    Frame frame;
    const FrameSocket::Status status = receive(frame, false);
    if (status == FrameSocket::Status::would_block)
      break;
    read.emplace_back(status, std::move(frame));
    if (status == FrameSocket::Status::closed || !socket_.holds_frames())
      break;
  }
  lock.lock();
  reading_ = false;
  for (auto& [status, frame] : read)
    file(status, std::move(frame));
  read.clear();  // keeps its capacity for the next time
  changed_.notify_all();
}

template <typename Done>
void ParentLink::read_until(std::unique_lock<std::mutex>& lock, Done done) {
  while (!done() && !host_gone_) {
    if (reading_)
      changed_.wait(lock);  // the watcher reads: it files what comes and wakes us
    else
      read_one(lock);
  }
}

void ParentLink::watch_loop() {
  std::unique_lock lock(mutex_);
  std::uint64_t runs_seen = runs_;
  while (!closing_ && !host_gone_) {
    // Busy (a run since the last tick, or frames held): tick often enough to bound how long
    // anything is held; idle: rarely.
    const bool busy = runs_ != runs_seen || !held_.empty();
    runs_seen = runs_;
    watcher_wake_.wait_for(lock, busy ? std::chrono::milliseconds(kHoldAtMost) : kTakeOver);
    if (closing_ || host_gone_)
      break;
    if (!held_.empty() && Clock::now() - held_.since() >= kHoldAtMost) {
      lock.unlock();
      flush();
      lock.lock();
    }
    // The same handler run has run at least kTakeOver: read for it until it ends.
    const bool running_long = running_ != 0 && Clock::now() - run_started_ >= kTakeOver;
    if (!running_long)
      continue;
    read_until(lock, [&] { return running_ == 0 || closing_; });
  }
}

std::optional<Frame> ParentLink::next_work() {
  std::unique_lock lock(mutex_);
  running_ = 0;
  if (work_.empty()) {
    // About to wait for the host: it must have every outcome first.
    lock.unlock();
    flush();
    lock.lock();
  }
  read_until(lock, [&] { return !work_.empty(); });
  if (work_.empty())
    return std::nullopt;
  Frame frame = std::move(work_.front());
  work_.pop_front();
  const auto* message = std::get_if<Deliver>(&frame);
  if (message == nullptr || message->report_at_once) {
    lock.unlock();
    flush();  // Shutdown ends the process; a message sent again after a death runs alone
    lock.lock();
  }
  if (message != nullptr) {
    --delivers_waiting_;
    running_ = ++runs_;
    run_started_ = Clock::now();
    in_run_since_ns_.store(run_started_.time_since_epoch().count(), std::memory_order_relaxed);
  }
  return frame;
}

template <typename Answer>
std::optional<Answer> ParentLink::await(std::map<std::uint64_t, Answer>& answers,
                                        std::uint64_t key) {
  std::unique_lock lock(mutex_);
  read_until(lock, [&] { return answers.contains(key); });
  auto found = answers.find(key);
  if (found == answers.end())
    return std::nullopt;
  Answer answer = std::move(found->second);
  answers.erase(found);
  return answer;
}

std::optional<std::string> ParentLink::publish(std::uint64_t sequence, OutgoingMessage message) {
  std::uint64_t request;
  {
    std::lock_guard lock(mutex_);
    request = next_request_++;
  }
  if (!send(PublishRequest{sequence, request, std::move(message)}))
    return "the host is gone";
  auto result = await(publish_results_, request);
  if (!result)
    return "the host is gone";
  return result->error;
}

std::string ParentLink::declare_metric(MetricDeclare declaration) {
  std::uint32_t metric = declaration.metric;
  if (!send(declaration))
    return "the host is gone";
  auto verdict = await(metric_verdicts_, metric);
  return verdict ? verdict->refusal : "the host is gone";
}

bool ParentLink::cancelled(std::uint64_t sequence) const {
  std::lock_guard lock(mutex_);
  return cancelled_up_to_ >= sequence;
}

}  // namespace warren::isolation
