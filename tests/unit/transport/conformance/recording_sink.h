// A DeliverySink that keeps every delivery it is handed, for tests to wait on and settle.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/transport.h"

namespace warren::transport::testing {

class RecordingSink final : public DeliverySink {
 public:
  void deliver(std::unique_ptr<Delivery> delivery) override {
    std::lock_guard lock(mutex_);
    deliveries_.push_back(std::move(delivery));
    arrived_.notify_all();
  }

  // Waits until `count` deliveries arrived in all, or `timeout`; returns how many arrived.
  std::size_t wait_for(std::size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, timeout, [&] { return deliveries_.size() >= count; });
    return deliveries_.size();
  }

  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return deliveries_.size();
  }

  // The i-th delivery (in arrival order); it stays owned by the sink.
  Delivery& at(std::size_t i) {
    std::lock_guard lock(mutex_);
    return *deliveries_.at(i);
  }

  // Drops every delivery (after the transport closed: they refer to it).
  void clear() {
    std::lock_guard lock(mutex_);
    deliveries_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<std::unique_ptr<Delivery>> deliveries_;
};

}  // namespace warren::transport::testing
