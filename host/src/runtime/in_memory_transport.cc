// See in_memory_transport.h. One mutex guards everything: this transport is for tests and
// demos, where clarity beats throughput.
#include "runtime/in_memory_transport.h"

#include <algorithm>
#include <chrono>

#include "config/routing_table.h"
#include "observability/log.h"
#include "observability/timestamp.h"
#include "transport/failure_headers.h"
#include "transport/ids.h"

namespace warren::runtime {

struct InMemoryTransport::Queue {
  std::string name;
  std::size_t capacity = 0;  // 0: unbounded
  std::string dead_letter_exchange;
  std::string dead_letter_routing_key;
  std::deque<transport::InboundMessage> ready;
};

struct InMemoryTransport::Consumer {
  struct InFlight {
    transport::InboundMessage message;
    std::shared_ptr<std::atomic<bool>> stale;
  };
  transport::Subscription subscription;
  Queue* queue = nullptr;
  std::uint64_t next_sequence = 0;
  std::map<std::uint64_t, InFlight> unsettled;  // by delivery sequence
  bool stopped = false;                         // stop_consuming(worker)
  std::thread thread;
};

class InMemoryTransport::MemoryDelivery final : public transport::Delivery {
 public:
  MemoryDelivery(InMemoryTransport& transport, Consumer& consumer, std::uint64_t sequence,
                 transport::InboundMessage message, std::shared_ptr<std::atomic<bool>> stale)
      : transport_(transport),
        consumer_(consumer),
        sequence_(sequence),
        message_(std::move(message)),
        stale_(std::move(stale)) {}
  const transport::InboundMessage& message() const noexcept override { return message_; }
  bool stale() const noexcept override { return stale_->load(); }
  void settle(const transport::Settlement& settlement) override {
    transport_.settle(consumer_, sequence_, settlement);
  }

 private:
  InMemoryTransport& transport_;
  Consumer& consumer_;
  const std::uint64_t sequence_;
  const transport::InboundMessage message_;
  const std::shared_ptr<std::atomic<bool>> stale_;
};

InMemoryTransport::InMemoryTransport(const config::Config& config,
                                     std::chrono::milliseconds publish_timeout)
    : config_(config), routing_(config::routing_table(config)), publish_timeout_(publish_timeout) {
  for (const auto& spec : config_.queues) {
    auto queue = std::make_unique<Queue>();
    queue->name = spec.name;
    queue->capacity = spec.max_length ? static_cast<std::size_t>(*spec.max_length) : 0;
    queue->dead_letter_exchange = spec.dead_letter_exchange;
    queue->dead_letter_routing_key = spec.dead_letter_routing_key;
    queues_.emplace(spec.name, std::move(queue));
  }
  for (const auto& worker : config_.workers) {
    if (!worker.dead_letter_queue.empty() && !queues_.contains(worker.dead_letter_queue)) {
      auto queue = std::make_unique<Queue>();
      queue->name = worker.dead_letter_queue;
      queues_.emplace(worker.dead_letter_queue, std::move(queue));
    }
  }
  timer_thread_ = std::thread([this] { timer_loop(); });
}

InMemoryTransport::~InMemoryTransport() {
  close();
  if (timer_thread_.joinable())
    timer_thread_.join();
}

void InMemoryTransport::start(const std::vector<transport::Subscription>& subscriptions) {
  std::unique_lock lock(mutex_);
  for (const auto& subscription : subscriptions) {
    auto it = queues_.find(subscription.queue);
    if (it == queues_.end()) {
      throw transport::TransportError("queue '" + subscription.queue + "' of worker '" +
                                      subscription.worker + "' does not exist");
    }
    auto consumer = std::make_unique<Consumer>();
    consumer->subscription = subscription;
    consumer->queue = it->second.get();
    consumers_.push_back(std::move(consumer));
  }
  consuming_ = true;
  for (auto& consumer : consumers_) {
    Consumer* c = consumer.get();
    c->thread = std::thread([this, c] { consume_loop(*c); });
  }
}

void InMemoryTransport::consume_loop(Consumer& consumer) {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] {
      return !consuming_ || consumer.stopped ||
             (!consumer.queue->ready.empty() &&
              consumer.unsettled.size() < consumer.subscription.prefetch);
    });
    if (!consuming_ || consumer.stopped)
      return;
    transport::InboundMessage message = std::move(consumer.queue->ready.front());
    consumer.queue->ready.pop_front();
    const std::uint64_t sequence = consumer.next_sequence++;
    auto stale = std::make_shared<std::atomic<bool>>(false);
    consumer.unsettled.emplace(sequence, Consumer::InFlight{message, stale});
    changed_.notify_all();  // room in the queue for waiting publishers
    lock.unlock();
    consumer.subscription.sink->deliver(std::make_unique<MemoryDelivery>(
        *this, consumer, sequence, std::move(message), std::move(stale)));
    lock.lock();
  }
}

void InMemoryTransport::stop_consuming() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    consuming_ = false;
    changed_.notify_all();
    for (auto& consumer : consumers_)
      threads.push_back(std::move(consumer->thread));
  }
  for (auto& thread : threads) {
    if (thread.joinable())
      thread.join();
  }
}

void InMemoryTransport::stop_consuming(const std::string& worker) {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    for (auto& consumer : consumers_) {
      if (consumer->subscription.worker != worker)
        continue;
      consumer->stopped = true;
      threads.push_back(std::move(consumer->thread));
    }
    changed_.notify_all();
  }
  for (auto& thread : threads) {
    if (thread.joinable())
      thread.join();
  }
}

void InMemoryTransport::close() {
  stop_consuming();
  std::unique_lock lock(mutex_);
  return_unsettled_locked(lock);
  closing_ = true;
  changed_.notify_all();
}

void InMemoryTransport::lose_connection() {
  std::unique_lock lock(mutex_);
  return_unsettled_locked(lock);
}

void InMemoryTransport::return_unsettled_locked(std::unique_lock<std::mutex>& lock) {
  for (auto& consumer : consumers_) {
    // Back to the front in delivery order: the last one pushed first.
    for (auto it = consumer->unsettled.rbegin(); it != consumer->unsettled.rend(); ++it) {
      it->second.stale->store(true);
      it->second.message.redelivered = true;
      push_locked(lock, *consumer->queue, std::move(it->second.message), Placement::front);
    }
    consumer->unsettled.clear();
  }
  changed_.notify_all();
}

void InMemoryTransport::push_locked(std::unique_lock<std::mutex>& lock, Queue& queue,
                                    transport::InboundMessage message, Placement placement) {
  if (placement == Placement::back_when_room && queue.capacity > 0) {
    const bool room = changed_.wait_for(
        lock, publish_timeout_, [&] { return closing_ || queue.ready.size() < queue.capacity; });
    if (!room || closing_) {
      throw transport::PublishError(transport::PublishError::Reason::timeout,
                                    "queue '" + queue.name + "' stayed full for " +
                                        std::to_string(publish_timeout_.count()) + " ms");
    }
  }
  message.queue = queue.name;
  if (placement == Placement::front) {
    queue.ready.push_front(std::move(message));
  } else {
    queue.ready.push_back(std::move(message));
  }
  changed_.notify_all();
}

void InMemoryTransport::enqueue(const std::string& queue, transport::InboundMessage message) {
  std::unique_lock lock(mutex_);
  auto it = queues_.find(queue);
  if (it == queues_.end())
    throw transport::TransportError("no queue named '" + queue + "'");
  if (message.message_id.empty())
    message.message_id = transport::random_uuid();
  push_locked(lock, *it->second, std::move(message), Placement::back_when_room);
}

bool InMemoryTransport::route_locked(const std::string& exchange, const std::string& routing_key,
                                     const transport::TextHeaders& headers,
                                     std::vector<Queue*>& targets) {
  const auto queues = routing_.route(exchange, routing_key, headers);
  if (!queues)
    return false;
  for (const auto& name : *queues)
    targets.push_back(queues_.at(name).get());
  return true;
}

void InMemoryTransport::publish(const transport::OutboundMessage& message) {
  std::unique_lock lock(mutex_);
  for (const std::string& name : transport::publish_targets(routing_, message)) {
    Queue* queue = queues_.at(name).get();
    transport::InboundMessage copy;
    copy.exchange = message.exchange;
    copy.routing_key = message.routing_key;
    copy.message_id = message.message_id.empty() ? transport::random_uuid() : message.message_id;
    copy.content_type = message.content_type;
    copy.body = message.body;
    copy.headers = message.headers;
    copy.wire_properties = message.wire_properties;  // as a broker keeps a message's properties
    push_locked(lock, *queue, std::move(copy), Placement::back_when_room);
  }
}

void InMemoryTransport::settle(Consumer& consumer, std::uint64_t sequence,
                               const transport::Settlement& settlement) {
  std::unique_lock lock(mutex_);
  auto in_flight = consumer.unsettled.find(sequence);
  if (in_flight == consumer.unsettled.end())
    return;  // stale: the message went back to its queue with the connection
  transport::InboundMessage message = std::move(in_flight->second.message);
  consumer.unsettled.erase(in_flight);
  changed_.notify_all();
  switch (settlement.kind) {
    case transport::Settlement::Kind::ack:
      return;
    case transport::Settlement::Kind::requeue:
      message.redelivered = true;
      push_locked(lock, *consumer.queue, std::move(message), Placement::front);
      return;
    case transport::Settlement::Kind::retry_later: {
      transport::add_retry_headers(message.headers, message, settlement,
                                   observability::utc_now_rfc3339());
      message.attempt = settlement.next_attempt;
      message.redelivered = false;
      timers_.push_back(Timer{std::chrono::steady_clock::now() + settlement.delay,
                              consumer.queue->name, std::move(message)});
      changed_.notify_all();
      return;
    }
    case transport::Settlement::Kind::dead_letter:
      dead_letter_locked(lock, consumer, std::move(message), settlement);
      return;
  }
}

void InMemoryTransport::dead_letter_locked(std::unique_lock<std::mutex>& lock, Consumer& consumer,
                                           transport::InboundMessage message,
                                           const transport::Settlement& settlement) {
  const std::string& exchange = consumer.subscription.dead_letter_exchange.empty()
                                    ? consumer.queue->dead_letter_exchange
                                    : consumer.subscription.dead_letter_exchange;
  const std::string routing_key = consumer.queue->dead_letter_routing_key.empty()
                                      ? message.routing_key
                                      : consumer.queue->dead_letter_routing_key;
  transport::add_dead_letter_headers(message.headers, message, settlement,
                                     observability::utc_now_rfc3339());
  std::vector<Queue*> targets;
  if (exchange.empty() || !route_locked(exchange, routing_key, message.headers, targets) ||
      targets.empty()) {
    observability::log_warn("in-memory transport: dead letter of queue '" + consumer.queue->name +
                            "' dropped: no dead-letter queue bound");
    return;
  }
  for (Queue* queue : targets)
    push_locked(lock, *queue, message, Placement::back);
}

void InMemoryTransport::timer_loop() {
  std::unique_lock lock(mutex_);
  while (!closing_) {
    const auto now = std::chrono::steady_clock::now();
    auto due =
        std::partition(timers_.begin(), timers_.end(), [&](const Timer& t) { return t.due > now; });
    std::vector<Timer> fired(std::make_move_iterator(due), std::make_move_iterator(timers_.end()));
    timers_.erase(due, timers_.end());
    for (auto& timer : fired) {
      push_locked(lock, *queues_.at(timer.queue), std::move(timer.message), Placement::back);
    }
    auto next = now + std::chrono::seconds(1);
    for (const auto& timer : timers_)
      next = std::min(next, timer.due);
    changed_.wait_until(lock, next);
  }
}

std::size_t InMemoryTransport::depth(const std::string& queue) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(queue);
  return it == queues_.end() ? 0 : it->second->ready.size();
}

std::size_t InMemoryTransport::unsettled() const {
  std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const auto& consumer : consumers_)
    total += consumer->unsettled.size();
  return total;
}

}  // namespace warren::runtime
