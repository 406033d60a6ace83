// A broker in the process: the exchanges, queues and bindings of the config, bounded queues
// whose publishers wait when full (the seed's Channel<T> with FullMode.Wait), prefetch per
// subscription, delayed retries on a timer, and dead-lettering through the queue's DLX. Like a
// broker, it takes back what is unsettled when the "connection" goes (lose_connection(),
// close()): those messages are delivered again, marked redelivered, and the old deliveries turn
// stale. For unit tests and the demo; nothing survives the process.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "transport/routing.h"
#include "transport/transport.h"

namespace warren::runtime {

class InMemoryTransport final : public transport::Transport {
 public:
  // `publish_timeout`: how long a publish waits for room in a full queue.
  explicit InMemoryTransport(const config::Config& config,
                             std::chrono::milliseconds publish_timeout = std::chrono::seconds(5));
  ~InMemoryTransport() override;

  void start(const std::vector<transport::Subscription>& subscriptions) override;
  void stop_consuming() override;
  void stop_consuming(const std::string& worker) override;
  void close() override;
  bool ready() const noexcept override { return consuming_.load(); }
  void publish(const transport::OutboundMessage& message) override;

  // Puts a message straight into a queue (tests), waiting while it is full.
  void enqueue(const std::string& queue, transport::InboundMessage message);
  std::size_t depth(const std::string& queue) const;
  // Deliveries handed out and not settled yet, across subscriptions.
  std::size_t unsettled() const;
  // What a broker does when the connection drops: every unsettled delivery goes back to the
  // front of its queue, marked redelivered; the deliveries already handed out become stale and
  // their settlements are dropped. Consuming goes on (as after a reconnect).
  void lose_connection();

 private:
  struct Queue;
  struct Consumer;
  class MemoryDelivery;

  // Where a message goes: publishers wait for room; redeliveries and timers never wait.
  enum class Placement { back_when_room, back, front };
  void push_locked(std::unique_lock<std::mutex>& lock, Queue& queue,
                   transport::InboundMessage message, Placement placement);
  void consume_loop(Consumer& consumer);
  void timer_loop();
  void settle(Consumer& consumer, std::uint64_t sequence, const transport::Settlement& settlement);
  void return_unsettled_locked(std::unique_lock<std::mutex>& lock);
  void dead_letter_locked(std::unique_lock<std::mutex>& lock, Consumer& consumer,
                          transport::InboundMessage message,
                          const transport::Settlement& settlement);
  // Queues a message with this routing reaches; false when the exchange does not exist.
  bool route_locked(const std::string& exchange, const std::string& routing_key,
                    const transport::TextHeaders& headers, std::vector<Queue*>& targets);

  const config::Config config_;
  const transport::RoutingTable routing_;
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
    transport::InboundMessage message;
  };
  std::vector<Timer> timers_;
  std::thread timer_thread_;
};

}  // namespace warren::runtime
