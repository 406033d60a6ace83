// A broker in the process: the exchanges, queues and bindings of the config, bounded queues
// whose publishers wait when full (the seed's Channel<T> with FullMode.Wait), prefetch per
// subscription, delayed retries on a timer, and dead-lettering through the queue's DLX.
// For unit tests and the demo; nothing survives the process.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "runtime/transport.h"

namespace warren::runtime {

class InMemoryTransport final : public Transport {
 public:
  // `publish_timeout`: how long a publish waits for room in a full queue.
  explicit InMemoryTransport(const config::Config& config,
                             std::chrono::milliseconds publish_timeout = std::chrono::seconds(5));
  ~InMemoryTransport() override;

  void start(const std::vector<Subscription>& subscriptions) override;
  void stop_consuming() override;
  void close() override;
  bool ready() const noexcept override { return consuming_.load(); }
  void publish(const OutboundMessage& message) override;

  // Puts a message straight into a queue (tests), waiting while it is full.
  void enqueue(const std::string& queue, InboundMessage message);
  std::size_t depth(const std::string& queue) const;
  // Deliveries handed out and not settled yet, across subscriptions.
  std::size_t unsettled() const;

 private:
  struct Queue;
  struct Consumer;
  class MemoryDelivery;

  // Where a message goes: publishers wait for room; redeliveries and timers never wait.
  enum class Placement { back_when_room, back, front };
  void push_locked(std::unique_lock<std::mutex>& lock, Queue& queue, InboundMessage message,
                   Placement placement);
  void consume_loop(Consumer& consumer);
  void timer_loop();
  void settle(Consumer& consumer, InboundMessage message, const Settlement& settlement);
  void dead_letter_locked(std::unique_lock<std::mutex>& lock, Consumer& consumer,
                          InboundMessage message, const Settlement& settlement);
  // Queues a message with this routing reaches; false when the exchange does not exist.
  bool route_locked(const std::string& exchange, const std::string& routing_key,
                    const TextHeaders& headers, std::vector<Queue*>& targets);

  const config::Config config_;
  const std::chrono::milliseconds publish_timeout_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::unique_ptr<Queue>, std::less<>> queues_;
  std::vector<std::unique_ptr<Consumer>> consumers_;
  std::atomic<bool> consuming_{false};
  bool closing_ = false;

  struct Timer {
    std::chrono::steady_clock::time_point due;
    std::string queue;
    InboundMessage message;
  };
  std::vector<Timer> timers_;
  std::thread timer_thread_;
};

}  // namespace warren::runtime
