// The worker process's side of its socket: one reader thread takes every frame from the host as
// it arrives, so a Ping is answered and a Cancel seen while a handler runs on the main thread;
// work (Deliver, Shutdown) queues for the main thread, and the answers a handler waits for
// (PublishResult, MetricDeclared) wake it. Sends are serialised by a lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "isolation/frame_socket.h"

namespace warren::isolation {

class ParentLink {
 public:
  explicit ParentLink(FrameSocket socket) : socket_(std::move(socket)) {}
  ParentLink(const ParentLink&) = delete;
  ParentLink& operator=(const ParentLink&) = delete;
  ~ParentLink();

  // Before start_reader(): one frame read on the caller's thread (the Start frame).
  std::optional<Frame> receive_first(std::chrono::milliseconds timeout);
  void start_reader();

  // false when the host is gone; the caller then ends.
  bool send(const Frame& frame);

  // The next Deliver or Shutdown; std::nullopt once the host is gone.
  std::optional<Frame> next_work();
  // The handler of SEQUENCE asks for a publish; waits for the host's answer (std::nullopt:
  // confirmed). The host gone: "the host is gone".
  std::optional<std::string> publish(std::uint64_t sequence, OutgoingMessage message);
  // Declares a metric and waits for the verdict: empty, accepted; else the refusal.
  std::string declare_metric(MetricDeclare declaration);
  // Whether the host sent Cancel for SEQUENCE (its soft_timeout passed).
  bool cancelled(std::uint64_t sequence) const;

 private:
  void read_loop();
  void on_frame(Frame frame);
  // Waits until ANSWERS holds KEY or the host is gone; takes the answer out.
  template <typename Answer>
  std::optional<Answer> await(std::map<std::uint64_t, Answer>& answers, std::uint64_t key);

  FrameSocket socket_;
  std::mutex send_mutex_;
  std::thread reader_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Frame> work_;
  std::map<std::uint64_t, PublishResult> publish_results_;
  std::map<std::uint64_t, MetricDeclared> metric_verdicts_;
  std::uint64_t cancelled_up_to_ = 0;
  std::uint64_t next_request_ = 1;
  bool host_gone_ = false;
};

}  // namespace warren::isolation
