// A DeliverySink whose deliveries a thread of its own acks as they come (a worker keeping up
// with its queue), and which counts the deliveries handed to it after it was told that its
// worker stopped consuming: there must be none (transport.h, stop_consuming(worker)).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/transport.h"

namespace warren::transport::testing {

class AckingSink final : public DeliverySink {
 public:
  AckingSink() : acker_([this] { ack_as_they_come(); }) {}
  ~AckingSink() override { finish(); }
  AckingSink(const AckingSink&) = delete;
  AckingSink& operator=(const AckingSink&) = delete;

  void deliver(std::unique_ptr<Delivery> delivery) override {
    std::lock_guard lock(mutex_);
    if (stopped_)
      ++late_;
    waiting_.push_back(std::move(delivery));
    changed_.notify_all();
  }

  // Waits until `count` deliveries were acked, or `timeout`; returns how many were.
  std::size_t wait_for_acked(std::size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return acked_ >= count; });
    return acked_;
  }
  // Its worker stopped consuming: from now on a delivery is late.
  void worker_stopped() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  // Acks what it holds, then its thread ends.
  void finish() {
    {
      std::lock_guard lock(mutex_);
      finishing_ = true;
      changed_.notify_all();
    }
    if (acker_.joinable())
      acker_.join();
  }
  std::size_t acked() const {
    std::lock_guard lock(mutex_);
    return acked_;
  }
  std::size_t late() const {
    std::lock_guard lock(mutex_);
    return late_;
  }

 private:
  void ack_as_they_come() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return finishing_ || !waiting_.empty(); });
      if (waiting_.empty())
        return;  // finishing, and nothing left to ack
      std::unique_ptr<Delivery> delivery = std::move(waiting_.front());
      waiting_.pop_front();
      lock.unlock();
      delivery->settle(Settlement::ack());
      delivery.reset();
      lock.lock();
      ++acked_;
      changed_.notify_all();
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Delivery>> waiting_;
  std::size_t acked_ = 0;
  std::size_t late_ = 0;
  bool stopped_ = false;
  bool finishing_ = false;
  std::thread acker_;  // last: it starts once the rest is made
};

}  // namespace warren::transport::testing
