#include "isolation/worker/parent_link.h"

#include <poll.h>
#include <sys/socket.h>

#include "isolation/frame_codec.h"

namespace warren::isolation {

namespace {
// A send to the host waits this long for room: the host reads continuously, so only a host
// that is stuck (or gone) takes longer, and then this child has no one to work for.
constexpr std::chrono::seconds kSendTimeout{30};
}  // namespace

ParentLink::~ParentLink() {
  if (reader_.joinable()) {
    ::shutdown(socket_.fd(), SHUT_RDWR);
    reader_.join();
  }
}

std::optional<Frame> ParentLink::receive_first(std::chrono::milliseconds timeout) {
  return socket_.receive_within(timeout);
}

void ParentLink::start_reader() {
  reader_ = std::thread([this] { read_loop(); });
}

bool ParentLink::send(const Frame& frame) {
  std::lock_guard lock(send_mutex_);
  return socket_.send(frame, kSendTimeout);
}

void ParentLink::read_loop() {
  while (true) {
    Frame frame;
    FrameSocket::Status status;
    try {
      status = socket_.receive(frame);
    } catch (const FrameError&) {
      status = FrameSocket::Status::closed;  // a host that sends garbage is not one to serve
    }
    if (status == FrameSocket::Status::frame) {
      on_frame(std::move(frame));
      continue;
    }
    if (status == FrameSocket::Status::closed)
      break;
    pollfd readable{socket_.fd(), POLLIN, 0};
    ::poll(&readable, 1, -1);
  }
  std::lock_guard lock(mutex_);
  host_gone_ = true;
  changed_.notify_all();
}

void ParentLink::on_frame(Frame frame) {
  if (const auto* ping = std::get_if<Ping>(&frame)) {
    send(Pong{ping->nonce});
    return;
  }
  std::lock_guard lock(mutex_);
  if (const auto* cancel = std::get_if<Cancel>(&frame)) {
    cancelled_up_to_ = std::max(cancelled_up_to_, cancel->sequence);
  } else if (auto* result = std::get_if<PublishResult>(&frame)) {
    publish_results_[result->request] = std::move(*result);
  } else if (const auto* verdict = std::get_if<MetricDeclared>(&frame)) {
    metric_verdicts_[verdict->metric] = *verdict;
  } else {
    work_.push_back(std::move(frame));  // Deliver, Shutdown; anything else the main loop refuses
  }
  changed_.notify_all();
}

std::optional<Frame> ParentLink::next_work() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !work_.empty() || host_gone_; });
  if (work_.empty())
    return std::nullopt;
  Frame frame = std::move(work_.front());
  work_.pop_front();
  return frame;
}

template <typename Answer>
std::optional<Answer> ParentLink::await(std::map<std::uint64_t, Answer>& answers,
                                        std::uint64_t key) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return answers.contains(key) || host_gone_; });
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
