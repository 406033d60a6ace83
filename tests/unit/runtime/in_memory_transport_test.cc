// Specification of the in-memory transport: routing, prefetch, FullMode.Wait publishing,
// delayed retries and dead-lettering.
#include "runtime/in_memory_transport.h"

#include <gtest/gtest.h>

#include <mutex>

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;

// Keeps deliveries unsettled until the test settles them.
class HoldingSink final : public transport::DeliverySink {
 public:
  void deliver(std::unique_ptr<transport::Delivery> delivery) override {
    std::lock_guard lock(mutex_);
    held_.push_back(std::move(delivery));
    cv_.notify_all();
  }
  bool wait_for(std::size_t count, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return held_.size() >= count; });
  }
  std::size_t size() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  std::unique_ptr<transport::Delivery> take(std::size_t index) {
    std::lock_guard lock(mutex_);
    return std::move(held_.at(index));
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<transport::Delivery>> held_;
};

config::Config bookstore() {
  config::Config config;
  config::ExchangeConfig events;
  events.name = "livraria.eventos";
  events.type = config::ExchangeType::topic;
  config.exchanges.push_back(events);
  config::ExchangeConfig dead;
  dead.name = "livraria.mortas";
  dead.type = config::ExchangeType::fanout;
  config.exchanges.push_back(dead);
  config::QueueConfig emails;
  emails.name = "livraria.emails";
  emails.dead_letter_exchange = "livraria.mortas";
  emails.bindings.push_back({"livraria.eventos", "pedido.registrado", {}});
  config.queues.push_back(emails);
  config::QueueConfig ranking;
  ranking.name = "livraria.ranking";
  ranking.max_length = 2;
  ranking.bindings.push_back({"livraria.eventos", "pedido.*", {}});
  config.queues.push_back(ranking);
  config::QueueConfig dlq;
  dlq.name = "livraria.mortas.q";
  dlq.bindings.push_back({"livraria.mortas", "", {}});
  config.queues.push_back(dlq);
  return config;
}

transport::OutboundMessage event(std::string routing_key, std::string id) {
  transport::OutboundMessage message;
  message.exchange = "livraria.eventos";
  message.routing_key = std::move(routing_key);
  message.message_id = std::move(id);
  message.body = "{}";
  return message;
}

TEST(InMemoryTransport, TopicPublish_ReachesEveryMatchingQueue) {
  InMemoryTransport transport(bookstore(), 100ms);
  transport.publish(event("pedido.registrado", "1"));
  transport.publish(event("pedido.cancelado", "2"));
  EXPECT_EQ(transport.depth("livraria.emails"), 1u);
  EXPECT_EQ(transport.depth("livraria.ranking"), 2u);
}

TEST(InMemoryTransport, UnroutableMandatoryPublish_IsReturnedAsAnError) {
  InMemoryTransport transport(bookstore(), 100ms);
  try {
    transport.publish(event("produto.alterado", "1"));
    FAIL() << "expected a PublishError";
  } catch (const transport::PublishError& e) {
    EXPECT_EQ(e.reason(), transport::PublishError::Reason::returned);
  }
}

TEST(InMemoryTransport, FullQueue_PublisherWaitsThenTimesOut) {
  InMemoryTransport transport(bookstore(), 50ms);
  transport.publish(event("pedido.cancelado", "1"));
  transport.publish(event("pedido.cancelado", "2"));
  EXPECT_THROW(transport.publish(event("pedido.cancelado", "3")), transport::PublishError);
  EXPECT_EQ(transport.depth("livraria.ranking"), 2u);
}

TEST(InMemoryTransport, Prefetch_BoundsUnsettledDeliveries) {
  InMemoryTransport transport(bookstore(), 100ms);
  for (int i = 0; i < 10; ++i) {
    transport::InboundMessage message;
    message.message_id = std::to_string(i);
    transport.enqueue("livraria.emails", std::move(message));
  }
  HoldingSink sink;
  transport.start({transport::Subscription{"emails", "livraria.emails", 3, &sink, ""}});
  ASSERT_TRUE(sink.wait_for(3));
  EXPECT_FALSE(sink.wait_for(4, 100ms));
  sink.take(0)->settle(transport::Settlement::ack());
  EXPECT_TRUE(sink.wait_for(4));
  EXPECT_EQ(transport.unsettled(), 3u);
  transport.stop_consuming();
}

TEST(InMemoryTransport, RetryLater_RedeliversAfterTheDelayWithTheNextAttempt) {
  InMemoryTransport transport(bookstore(), 100ms);
  auto published = event("pedido.registrado", "r1");
  published.wire_properties = "what a broker keeps of the message";
  transport.publish(published);
  HoldingSink sink;
  transport.start({transport::Subscription{"emails", "livraria.emails", 1, &sink, ""}});
  ASSERT_TRUE(sink.wait_for(1));
  transport::Settlement retry;
  retry.kind = transport::Settlement::Kind::retry_later;
  retry.delay = 150ms;
  retry.next_attempt = 2;
  const auto settled_at = std::chrono::steady_clock::now();
  sink.take(0)->settle(retry);
  ASSERT_TRUE(sink.wait_for(2, 5s));
  EXPECT_GE(std::chrono::steady_clock::now() - settled_at, 150ms);
  auto again = sink.take(1);
  EXPECT_EQ(again->message().attempt, 2u);
  EXPECT_EQ(transport::find_header(again->message().headers, "x-warren-attempt"), "2");
  EXPECT_EQ(again->message().wire_properties, published.wire_properties)
      << "a retry is the message as published";
  again->settle(transport::Settlement::ack());
  transport.stop_consuming();
}

TEST(InMemoryTransport, DeadLetter_GoesToTheQueuesDeadLetterExchangeWithTheReason) {
  InMemoryTransport transport(bookstore(), 100ms);
  transport.publish(event("pedido.registrado", "d1"));
  HoldingSink sink;
  HoldingSink dead_letters;
  transport.start({transport::Subscription{"emails", "livraria.emails", 1, &sink, ""},
                   transport::Subscription{"audit", "livraria.mortas.q", 1, &dead_letters, ""}});
  ASSERT_TRUE(sink.wait_for(1));
  transport::Settlement dead;
  dead.kind = transport::Settlement::Kind::dead_letter;
  dead.reason = "warren::PermanentError: malformed JSON";
  dead.worker = "emails";
  sink.take(0)->settle(dead);

  ASSERT_TRUE(dead_letters.wait_for(1));
  const auto letter = dead_letters.take(0);
  const transport::InboundMessage& message = letter->message();
  EXPECT_EQ(message.message_id, "d1");
  EXPECT_EQ(transport::find_header(message.headers, "x-warren-error"), dead.reason);
  EXPECT_EQ(transport::find_header(message.headers, "x-warren-worker"), "emails");
  EXPECT_EQ(transport::find_header(message.headers, "x-warren-original-exchange"),
            "livraria.eventos");
  EXPECT_EQ(transport::find_header(message.headers, "x-warren-original-routing-key"),
            "pedido.registrado");
  letter->settle(transport::Settlement::ack());
  transport.stop_consuming();
  EXPECT_EQ(transport.depth("livraria.emails"), 0u);
  EXPECT_EQ(transport.depth("livraria.mortas.q"), 0u);
}

}  // namespace
}  // namespace warren::runtime
