#include "isolation/worker/parent_link.h"

#include <sys/socket.h>

#include "isolation/frame_codec.h"

namespace warren::isolation {

namespace {
// A send to the host waits this long for room: the host reads continuously, so only a host
// that is stuck (or gone) takes longer, and then this child has no one to work for.
constexpr std::chrono::seconds kSendTimeout{30};
}  // namespace

ParentLink::~ParentLink() {
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
}

std::optional<Frame> ParentLink::receive_first(std::chrono::milliseconds timeout) {
  return socket_.receive_within(timeout);
}

void ParentLink::start_reader() {
  watcher_ = std::thread([this] { watch_loop(); });
}

bool ParentLink::send(const Frame& frame) {
  std::lock_guard lock(send_mutex_);
  return socket_.send(frame, kSendTimeout);
}

void ParentLink::read_one(std::unique_lock<std::mutex>& lock) {
  reading_ = true;
  lock.unlock();
  Frame frame;
  FrameSocket::Status status;
  try {
    status = socket_.receive_waiting(frame, FrameSocket::kForever);
  } catch (const FrameError&) {
    status = FrameSocket::Status::closed;  // a host that sends garbage is not one to serve
  }
  if (status == FrameSocket::Status::frame) {
    if (const auto* ping = std::get_if<Ping>(&frame))
      send(Pong{ping->nonce});  // at once, whoever reads it
  }
  lock.lock();
  reading_ = false;
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
      work_.push_back(std::move(frame));  // Deliver, Shutdown; anything else the main loop refuses
    }
  }
  // No waiter (the usual case: the main thread reads for itself) costs no system call here.
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
  std::uint64_t seen = 0;
  while (!closing_ && !host_gone_) {
    watcher_wake_.wait_for(lock, kTakeOver);
    // The same handler run as a tick ago has run at least kTakeOver: read for it until it ends.
    const bool running_long = running_ != 0 && running_ == seen;
    seen = running_;
    if (!running_long)
      continue;
    read_until(lock, [&] { return running_ == 0 || closing_; });
  }
}

std::optional<Frame> ParentLink::next_work() {
  std::unique_lock lock(mutex_);
  running_ = 0;
  read_until(lock, [&] { return !work_.empty(); });
  if (work_.empty())
    return std::nullopt;
  Frame frame = std::move(work_.front());
  work_.pop_front();
  if (std::holds_alternative<Deliver>(frame))
    running_ = ++runs_;
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
