// See in_memory_transport.h. One mutex guards everything: this transport is for tests and
// demos, where clarity beats throughput.
#include "runtime/in_memory_transport.h"

#include <algorithm>
#include <chrono>

#include "observability/log.h"
#include "runtime/ids.h"
#include "runtime/routing.h"

namespace warren::runtime {

struct InMemoryTransport::Queue {
  std::string name;
  std::size_t capacity = 0;  // 0: unbounded
  std::string dead_letter_exchange;
  std::string dead_letter_routing_key;
  std::deque<InboundMessage> ready;
};

struct InMemoryTransport::Consumer {
  Subscription subscription;
  Queue* queue = nullptr;
  std::size_t unsettled = 0;
  std::thread thread;
};

class InMemoryTransport::MemoryDelivery final : public Delivery {
 public:
  MemoryDelivery(InMemoryTransport& transport, Consumer& consumer, InboundMessage message)
      : transport_(transport), consumer_(consumer), message_(std::move(message)) {}
  const InboundMessage& message() const noexcept override { return message_; }
  void settle(const Settlement& settlement) override {
    transport_.settle(consumer_, message_, settlement);
  }

 private:
  InMemoryTransport& transport_;
  Consumer& consumer_;
  InboundMessage message_;
};

InMemoryTransport::InMemoryTransport(const config::Config& config,
                                     std::chrono::milliseconds publish_timeout)
    : config_(config), publish_timeout_(publish_timeout) {
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

void InMemoryTransport::start(const std::vector<Subscription>& subscriptions) {
  std::unique_lock lock(mutex_);
  for (const auto& subscription : subscriptions) {
    auto it = queues_.find(subscription.queue);
    if (it == queues_.end()) {
      throw TransportError("queue '" + subscription.queue + "' of worker '" + subscription.worker +
                           "' does not exist");
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
      return !consuming_ || (!consumer.queue->ready.empty() &&
                             consumer.unsettled < consumer.subscription.prefetch);
    });
    if (!consuming_)
      return;
    InboundMessage message = std::move(consumer.queue->ready.front());
    consumer.queue->ready.pop_front();
    ++consumer.unsettled;
    changed_.notify_all();  // room in the queue for waiting publishers
    lock.unlock();
    consumer.subscription.sink->deliver(
        std::make_unique<MemoryDelivery>(*this, consumer, std::move(message)));
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

void InMemoryTransport::close() {
  stop_consuming();
  std::lock_guard lock(mutex_);
  closing_ = true;
  changed_.notify_all();
}

void InMemoryTransport::push_locked(std::unique_lock<std::mutex>& lock, Queue& queue,
                                    InboundMessage message, Placement placement) {
  if (placement == Placement::back_when_room && queue.capacity > 0) {
    const bool room = changed_.wait_for(
        lock, publish_timeout_, [&] { return closing_ || queue.ready.size() < queue.capacity; });
    if (!room || closing_) {
      throw PublishError(PublishError::Reason::timeout,
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

void InMemoryTransport::enqueue(const std::string& queue, InboundMessage message) {
  std::unique_lock lock(mutex_);
  auto it = queues_.find(queue);
  if (it == queues_.end())
    throw TransportError("no queue named '" + queue + "'");
  if (message.message_id.empty())
    message.message_id = random_uuid();
  push_locked(lock, *it->second, std::move(message), Placement::back_when_room);
}

bool InMemoryTransport::route_locked(const std::string& exchange, const std::string& routing_key,
                                     const TextHeaders& headers, std::vector<Queue*>& targets) {
  if (exchange.empty()) {
    if (auto it = queues_.find(routing_key); it != queues_.end())
      targets.push_back(it->second.get());
    return true;
  }
  const config::ExchangeConfig* spec = config_.find_exchange(exchange);
  if (spec == nullptr)
    return false;
  for (const auto& queue_spec : config_.queues) {
    for (const auto& binding : queue_spec.bindings) {
      if (binding.exchange == exchange &&
          binding_matches(spec->type, binding, routing_key, headers)) {
        targets.push_back(queues_.at(queue_spec.name).get());
        break;
      }
    }
  }
  return true;
}

void InMemoryTransport::publish(const OutboundMessage& message) {
  std::unique_lock lock(mutex_);
  std::vector<Queue*> targets;
  if (!route_locked(message.exchange, message.routing_key, message.headers, targets)) {
    throw PublishError(PublishError::Reason::nacked,
                       "NOT_FOUND - no exchange '" + message.exchange + "'");
  }
  if (targets.empty() && message.mandatory) {
    throw PublishError(PublishError::Reason::returned,
                       "unroutable: no queue is bound to exchange '" + message.exchange +
                           "' for routing key '" + message.routing_key + "'");
  }
  for (Queue* queue : targets) {
    InboundMessage copy;
    copy.exchange = message.exchange;
    copy.routing_key = message.routing_key;
    copy.message_id = message.message_id.empty() ? random_uuid() : message.message_id;
    copy.content_type = message.content_type;
    copy.body = message.body;
    copy.headers = message.headers;
    push_locked(lock, *queue, std::move(copy), Placement::back_when_room);
  }
}

void InMemoryTransport::settle(Consumer& consumer, InboundMessage message,
                               const Settlement& settlement) {
  std::unique_lock lock(mutex_);
  --consumer.unsettled;
  changed_.notify_all();
  switch (settlement.kind) {
    case Settlement::Kind::ack:
      return;
    case Settlement::Kind::requeue:
      message.redelivered = true;
      push_locked(lock, *consumer.queue, std::move(message), Placement::front);
      return;
    case Settlement::Kind::retry_later: {
      message.attempt = settlement.next_attempt;
      message.redelivered = false;
      set_header(message.headers, "x-warren-attempt", std::to_string(settlement.next_attempt));
      for (const auto& [name, value] : settlement.headers_if_absent)
        set_header_if_absent(message.headers, name, value);
      timers_.push_back(Timer{std::chrono::steady_clock::now() + settlement.delay,
                              consumer.queue->name, std::move(message)});
      changed_.notify_all();
      return;
    }
    case Settlement::Kind::dead_letter:
      dead_letter_locked(lock, consumer, std::move(message), settlement);
      return;
  }
}

void InMemoryTransport::dead_letter_locked(std::unique_lock<std::mutex>& lock, Consumer& consumer,
                                           InboundMessage message, const Settlement& settlement) {
  const std::string& exchange = consumer.subscription.dead_letter_exchange.empty()
                                    ? consumer.queue->dead_letter_exchange
                                    : consumer.subscription.dead_letter_exchange;
  const std::string routing_key = consumer.queue->dead_letter_routing_key.empty()
                                      ? message.routing_key
                                      : consumer.queue->dead_letter_routing_key;
  message.headers.emplace_back("x-warren-error", settlement.reason.substr(0, 1024));
  message.headers.emplace_back("x-warren-worker", settlement.worker);
  message.headers.emplace_back("x-warren-original-exchange", message.exchange);
  message.headers.emplace_back("x-warren-original-routing-key", message.routing_key);
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
    total += consumer->unsettled;
  return total;
}

}  // namespace warren::runtime
