// A Delivery that records its settlement, for dispatcher tests without a transport.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transport/transport.h"

namespace warren::testing_support {

// Settlements of all FakeDeliveries sharing it, in order.
class SettlementLog {
 public:
  // `soon`: settled through settle_soon() (the settler said another settlement follows at once).
  void add(const std::string& message_id, const transport::Settlement& settlement,
           bool soon = false) {
    std::lock_guard lock(mutex_);
    entries_.push_back({message_id, settlement});
    soon_.push_back(soon);
    cv_.notify_all();
  }
  // For each entry, in order: whether it came through settle_soon().
  std::vector<bool> soon() const {
    std::lock_guard lock(mutex_);
    return soon_;
  }
  bool wait_for_count(std::size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return entries_.size() >= count; });
  }
  std::vector<std::pair<std::string, transport::Settlement>> entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  // How long each settle() takes, as an ack on a slow wire would (default: none).
  std::chrono::milliseconds settle_time{0};

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, transport::Settlement>> entries_;
  std::vector<bool> soon_;
};

class FakeDelivery final : public transport::Delivery {
 public:
  FakeDelivery(transport::InboundMessage message, SettlementLog& log, bool stale = false)
      : message_(std::move(message)), log_(log), stale_(stale) {}
  const transport::InboundMessage& message() const noexcept override { return message_; }
  bool stale() const noexcept override { return stale_; }
  void settle(const transport::Settlement& settlement) override { record(settlement, false); }
  void settle_soon(const transport::Settlement& settlement) override { record(settlement, true); }

  static std::unique_ptr<FakeDelivery> make(std::string id, SettlementLog& log,
                                            std::string body = {}) {
    transport::InboundMessage message;
    message.message_id = std::move(id);
    message.body = std::move(body);
    message.queue = "q";
    return std::make_unique<FakeDelivery>(std::move(message), log);
  }

 private:
  void record(const transport::Settlement& settlement, bool soon) {
    if (log_.settle_time.count() > 0)
      std::this_thread::sleep_for(log_.settle_time);
    log_.add(message_.message_id, settlement, soon);
  }

  transport::InboundMessage message_;
  SettlementLog& log_;
  bool stale_;
};

}  // namespace warren::testing_support
