// The transport conformance suite: one set of typed tests that every implementation of the
// transport seam (transport/transport.h) must pass, so that the runtime can rely on the same
// semantics whatever carries the messages: ack, requeue, retry_later with its delay and attempt,
// dead_letter with the reason headers, stale deliveries after a lost connection, stop_consuming
// then close with nothing lost, and publish errors.
//
// An implementation joins by writing a ConformanceBackend and instantiating the suite:
//   INSTANTIATE_TYPED_TEST_SUITE_P(InMemory, TransportConformance, InMemoryBackend);
// (tests/unit/transport/in_memory_conformance_test.cc,
// tests/unit/transport/rabbitmq_conformance_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "acking_sink.h"
#include "config/config.h"
#include "recording_sink.h"
#include "required_services.h"
#include "transport/transport.h"

namespace warren::transport::testing {

// What an implementation provides to the suite. Each test gets a fresh backend.
class ConformanceBackend {
 public:
  virtual ~ConformanceBackend() = default;
  // Empty when the backend can run here, else why not (a service that is not running): the
  // suite then skips, or fails under WARREN_REQUIRE_SERVICES=1.
  virtual std::string unavailable() const { return {}; }
  // A name no other test uses (backends shared between tests, such as a broker, need it).
  virtual std::string unique_name(std::string_view base) = 0;
  // Adds what the transport needs to the config (broker URIs, fast reconnects, a file path).
  virtual void prepare(config::Config& config) = 0;
  // A transport over `config` (which outlives it), not started.
  virtual std::unique_ptr<Transport> open(const config::Config& config) = 0;
  // Messages waiting in `queue`, not counting those delivered and unsettled.
  virtual std::size_t ready_count(const std::string& queue) = 0;
  // The connection of the last opened transport is lost, as when the broker closes it (a table
  // queue: the leases of its rows expire).
  virtual void lose_connection() = 0;
  // True when a dead letter travels to a dead-letter exchange and its queue (RabbitMQ, in-memory);
  // false when it stays in its own queue as a dead row (table queues): dead_rows() then reads it.
  virtual bool dead_letters_are_delivered() const { return true; }
  virtual std::vector<InboundMessage> dead_rows(const std::string& /*queue*/) { return {}; }
  // Removes what the test created (queues and exchanges on a shared broker).
  virtual void cleanup(const config::Config& /*config*/) {}
};

inline constexpr std::chrono::seconds kArrivalTimeout{30};

template <typename Backend>
class TransportConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = backend_.unavailable(); !why.empty())
      WARREN_SKIP_OR_FAIL(why);
    exchange_ = backend_.unique_name("conformance.events");
    dead_letter_exchange_ = backend_.unique_name("conformance.dlx");
    queue_ = backend_.unique_name("conformance.q");
    dead_letter_queue_ = backend_.unique_name("conformance.dlq");

    config_.host.name = backend_.unique_name("conformance-host");
    config::ExchangeConfig events;
    events.name = exchange_;
    events.type = config::ExchangeType::topic;
    config_.exchanges.push_back(events);
    config::ExchangeConfig dead_letters;
    dead_letters.name = dead_letter_exchange_;
    dead_letters.type = config::ExchangeType::fanout;
    config_.exchanges.push_back(dead_letters);
    config::QueueConfig queue;
    queue.name = queue_;
    queue.type = config::QueueType::classic;
    config::BindingConfig binding;
    binding.exchange = exchange_;
    binding.routing_key = "order.#";
    queue.bindings.push_back(binding);
    config_.queues.push_back(queue);
    config::QueueConfig dead = queue;
    dead.name = dead_letter_queue_;
    dead.bindings[0].exchange = dead_letter_exchange_;
    dead.bindings[0].routing_key = "";
    config_.queues.push_back(dead);
    backend_.prepare(config_);
    prepared_ = true;
  }

  void TearDown() override {
    if (transport_)
      transport_->close();
    main_.clear();
    dead_.clear();
    transport_.reset();
    if (prepared_)
      backend_.cleanup(config_);
  }

  // Opens the transport and consumes the queue (worker "conformance") and its dead-letter queue.
  void start(std::uint16_t prefetch = 10) {
    transport_ = backend_.open(config_);
    transport_->start({{"conformance", queue_, prefetch, &main_, dead_letter_exchange_},
                       {"dead-reader", dead_letter_queue_, 10, &dead_, ""}});
  }

  OutboundMessage message(int n) const {
    OutboundMessage out;
    out.exchange = exchange_;
    out.routing_key = "order.placed";
    out.message_id = "m-" + std::to_string(n);
    out.body = "body-" + std::to_string(n);
    out.content_type = "text/plain";
    out.headers = {{"x-test", "kept"}};
    return out;
  }

  void publish(int first, int count) {
    for (int n = first; n < first + count; ++n)
      transport_->publish(message(n));
  }

  // Waits until `count` deliveries arrived on `sink`; fails the test when they do not.
  void expect_arrivals(RecordingSink& sink, std::size_t count) {
    ASSERT_GE(sink.wait_for(count, kArrivalTimeout), count)
        << "deliveries that did not arrive within " << kArrivalTimeout.count() << " s";
  }

  static Settlement settlement(Settlement::Kind kind, std::string reason = {}) {
    Settlement s;
    s.kind = kind;
    s.worker = "conformance";
    s.reason = std::move(reason);
    return s;
  }

  Backend backend_;
  config::Config config_;
  bool prepared_ = false;
  std::string exchange_, dead_letter_exchange_, queue_, dead_letter_queue_;
  std::unique_ptr<Transport> transport_;
  RecordingSink main_;
  RecordingSink dead_;
};

TYPED_TEST_SUITE_P(TransportConformance);

// Each header named once at most: republishing sets headers, it never appends a second copy.
inline int header_count(const TextHeaders& headers, std::string_view name) {
  int n = 0;
  for (const auto& header : headers)
    n += header.first == name ? 1 : 0;
  return n;
}

TYPED_TEST_P(TransportConformance, Ack_EachMessageArrivesOnceAsPublishedAndLeavesTheQueue) {
  this->start();
  this->publish(0, 5);
  this->expect_arrivals(this->main_, 5);
  for (std::size_t i = 0; i < 5; ++i) {
    Delivery& delivery = this->main_.at(i);
    const InboundMessage& got = delivery.message();
    const OutboundMessage sent = this->message(static_cast<int>(i));
    EXPECT_EQ(got.message_id, sent.message_id);
    EXPECT_EQ(got.body, sent.body);
    EXPECT_EQ(got.content_type, "text/plain");
    EXPECT_EQ(got.queue, this->queue_);
    EXPECT_EQ(got.exchange, this->exchange_);
    EXPECT_EQ(got.routing_key, "order.placed");
    EXPECT_EQ(find_header(got.headers, "x-test"), "kept");
    EXPECT_EQ(got.attempt, 1u);
    EXPECT_FALSE(got.redelivered);
    EXPECT_FALSE(delivery.stale());
    delivery.settle(Settlement::ack());
  }
  this->transport_->stop_consuming();
  this->transport_->close();
  EXPECT_EQ(this->main_.count(), 5u);
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 0u) << "acked messages came back";
}

TYPED_TEST_P(TransportConformance, Requeue_TheMessageComesBackRedeliveredWithTheSameAttempt) {
  this->start();
  this->publish(0, 1);
  this->expect_arrivals(this->main_, 1);
  this->main_.at(0).settle(Settlement::requeue());
  this->expect_arrivals(this->main_, 2);
  const InboundMessage& again = this->main_.at(1).message();
  EXPECT_EQ(again.message_id, "m-0");
  EXPECT_EQ(again.body, "body-0");
  EXPECT_TRUE(again.redelivered);
  EXPECT_EQ(again.attempt, 1u);
  this->main_.at(1).settle(Settlement::ack());
  this->transport_->close();
  EXPECT_EQ(this->main_.count(), 2u);
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 0u);
}

TYPED_TEST_P(TransportConformance, RetryLater_ComesBackAfterItsDelayWithTheNextAttempt) {
  using namespace std::chrono_literals;
  this->start();
  this->publish(0, 1);
  this->expect_arrivals(this->main_, 1);
  auto retry = this->settlement(Settlement::Kind::retry_later, "std::runtime_error: timeout");
  retry.delay = 300ms;
  retry.next_attempt = 2;
  retry.headers_if_absent = {
      {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}};
  const auto settled_at = std::chrono::steady_clock::now();
  this->main_.at(0).settle(retry);
  this->expect_arrivals(this->main_, 2);
  const auto waited = std::chrono::steady_clock::now() - settled_at;
  EXPECT_GE(waited, 300ms) << "a retry came back before its delay";

  const InboundMessage& again = this->main_.at(1).message();
  EXPECT_EQ(again.message_id, "m-0");
  EXPECT_EQ(again.body, "body-0");
  EXPECT_EQ(again.queue, this->queue_);
  EXPECT_EQ(again.attempt, 2u);
  EXPECT_EQ(find_header(again.headers, "x-warren-attempt"), "2");
  EXPECT_EQ(header_count(again.headers, "x-warren-attempt"), 1);
  EXPECT_EQ(find_header(again.headers, "x-test"), "kept");
  EXPECT_EQ(find_header(again.headers, "x-warren-original-exchange"), this->exchange_);
  EXPECT_EQ(find_header(again.headers, "x-warren-original-routing-key"), "order.placed");
  EXPECT_EQ(find_header(again.headers, "x-warren-last-error"), "std::runtime_error: timeout");
  EXPECT_TRUE(find_header(again.headers, "x-warren-first-failed-at").has_value());
  EXPECT_EQ(find_header(again.headers, "traceparent"), retry.headers_if_absent[0].second);

  this->main_.at(1).settle(Settlement::ack());
  this->transport_->close();
  EXPECT_EQ(this->main_.count(), 2u);
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 0u);
}

TYPED_TEST_P(TransportConformance, DeadLetter_ArrivesInTheDeadLetterQueueWithTheReasonHeaders) {
  this->start();
  OutboundMessage failed_before = this->message(0);
  failed_before.headers.emplace_back("x-warren-error", "an older failure");
  failed_before.headers.emplace_back("x-warren-crashes", "1");
  this->transport_->publish(failed_before);
  this->expect_arrivals(this->main_, 1);
  auto dead = this->settlement(Settlement::Kind::dead_letter, "ValueError: no such order");
  dead.attempt = 3;
  dead.extra_headers = {{"x-warren-crashes", "3"}};  // what the runtime adds (crash accounting)
  this->main_.at(0).settle(dead);
  InboundMessage letter;
  const bool delivered = this->backend_.dead_letters_are_delivered();
  if (delivered) {
    this->expect_arrivals(this->dead_, 1);
    letter = this->dead_.at(0).message();
    EXPECT_EQ(letter.queue, this->dead_letter_queue_);
  } else {
    this->transport_->close();
    const auto rows = this->backend_.dead_rows(this->queue_);
    ASSERT_EQ(rows.size(), 1u);
    letter = rows[0];
  }
  EXPECT_EQ(letter.message_id, "m-0");
  EXPECT_EQ(letter.body, "body-0");
  EXPECT_EQ(find_header(letter.headers, "x-test"), "kept");
  EXPECT_EQ(find_header(letter.headers, "x-warren-error"), "ValueError: no such order");
  EXPECT_EQ(find_header(letter.headers, "x-warren-attempt"), "3");
  EXPECT_EQ(find_header(letter.headers, "x-warren-worker"), "conformance");
  EXPECT_EQ(find_header(letter.headers, "x-warren-queue"), this->queue_);
  EXPECT_EQ(find_header(letter.headers, "x-warren-original-exchange"), this->exchange_);
  EXPECT_EQ(find_header(letter.headers, "x-warren-original-routing-key"), "order.placed");
  EXPECT_TRUE(find_header(letter.headers, "x-warren-dead-lettered-at").has_value());
  EXPECT_TRUE(find_header(letter.headers, "x-warren-first-failed-at").has_value());
  EXPECT_EQ(find_header(letter.headers, "x-warren-crashes"), "3");
  for (const char* name :
       {"x-warren-error", "x-warren-attempt", "x-warren-worker", "x-warren-queue",
        "x-warren-original-exchange", "x-warren-original-routing-key", "x-warren-dead-lettered-at",
        "x-warren-crashes"}) {
    EXPECT_EQ(header_count(letter.headers, name), 1) << name;
  }
  if (delivered)
    this->dead_.at(0).settle(Settlement::ack());
  this->transport_->close();
  EXPECT_EQ(this->main_.count(), 1u) << "a dead-lettered message was delivered again";
  EXPECT_EQ(this->dead_.count(), delivered ? 1u : 0u);
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 0u);
  EXPECT_EQ(this->backend_.ready_count(this->dead_letter_queue_), 0u);
}

TYPED_TEST_P(TransportConformance, LostConnection_UnsettledDeliveriesTurnStaleAndComeBackOnce) {
  this->start();
  this->publish(0, 1);
  this->expect_arrivals(this->main_, 1);
  Delivery& first = this->main_.at(0);
  this->backend_.lose_connection();
  this->expect_arrivals(this->main_, 2);
  EXPECT_TRUE(first.stale()) << "the delivery of a lost connection is not marked stale";
  Delivery& second = this->main_.at(1);
  EXPECT_EQ(second.message().message_id, "m-0");
  EXPECT_TRUE(second.message().redelivered);
  EXPECT_FALSE(second.stale());
  // The stale copy's settlement is dropped (it cannot land), without an error.
  EXPECT_NO_THROW(first.settle(Settlement::ack()));
  second.settle(Settlement::ack());
  this->transport_->close();
  EXPECT_EQ(this->main_.count(), 2u) << "the message came back more than once";
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 0u);
}

TYPED_TEST_P(TransportConformance, StopConsumingThenClose_NothingIsLostAndNothingMoreArrives) {
  this->start(10);
  this->publish(0, 10);
  this->expect_arrivals(this->main_, 10);
  for (std::size_t i = 0; i < 4; ++i)
    this->main_.at(i).settle(Settlement::ack());
  this->transport_->stop_consuming();
  this->publish(10, 5);  // after stop_consuming: they wait in the queue
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 5u);
  // Deliveries handed out before stop_consuming are still settled, either way.
  for (std::size_t i = 4; i < 7; ++i)
    this->main_.at(i).settle(Settlement::ack());
  for (std::size_t i = 7; i < 10; ++i)
    this->main_.at(i).settle(Settlement::requeue());
  this->transport_->close();
  EXPECT_EQ(this->main_.count(), 10u) << "delivered after stop_consuming";
  // 15 published, 7 acked: the other 8 wait in the queue.
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 8u);
}

TYPED_TEST_P(TransportConformance,
             StopConsumingOneWorkerMidStream_NothingMoreReachesItsSinkAndNothingIsLost) {
  // A reload replacing a worker whose queue streams: the host destroys its dispatcher as soon
  // as stop_consuming(worker) returns, so no delivery may reach that sink after it (RabbitMQ:
  // those the broker sent before it saw the cancel go back to the queue).
  constexpr int kMessages = 1500;
  AckingSink streaming;
  this->transport_ = this->backend_.open(this->config_);
  this->transport_->start(
      {{"conformance", this->queue_, 50, &streaming, this->dead_letter_exchange_},
       {"dead-reader", this->dead_letter_queue_, 10, &this->dead_, ""}});
  // Closed before `streaming` goes, whatever the outcome (a failed ASSERT returns early).
  const std::unique_ptr<Transport, void (*)(Transport*)> close_first(
      this->transport_.get(), [](Transport* transport) { transport->close(); });
  this->publish(0, kMessages);
  ASSERT_GE(streaming.wait_for_acked(kMessages / 5, kArrivalTimeout), kMessages / 5u);
  this->transport_->stop_consuming("conformance");
  streaming.worker_stopped();
  streaming.finish();  // acks what it was handed before
  this->transport_->close();
  EXPECT_EQ(streaming.late(), 0u) << "delivered after stop_consuming(worker) returned";
  EXPECT_EQ(streaming.acked() + this->backend_.ready_count(this->queue_),
            static_cast<std::size_t>(kMessages))
      << "acked " << streaming.acked() << ": messages lost or not settled";
}

TYPED_TEST_P(TransportConformance, PublishErrors_NameTheirReasonAndPublishingGoesOn) {
  this->start();
  OutboundMessage missing = this->message(0);
  missing.exchange = this->backend_.unique_name("conformance.no-such-exchange");
  try {
    this->transport_->publish(missing);
    ADD_FAILURE() << "a publish to a missing exchange succeeded";
  } catch (const PublishError& e) {
    EXPECT_EQ(e.reason(), PublishError::Reason::nacked) << e.what();
  }
  OutboundMessage unroutable = this->message(1);
  unroutable.routing_key = "invoice.sent";  // nothing bound for it
  try {
    this->transport_->publish(unroutable);
    ADD_FAILURE() << "a mandatory publish that no queue takes succeeded";
  } catch (const PublishError& e) {
    EXPECT_EQ(e.reason(), PublishError::Reason::returned) << e.what();
  }
  unroutable.mandatory = false;
  EXPECT_NO_THROW(this->transport_->publish(unroutable)) << "fire-and-forget is not an error";

  this->publish(2, 1);
  this->expect_arrivals(this->main_, 1);
  EXPECT_EQ(this->main_.at(0).message().message_id, "m-2");
  this->main_.at(0).settle(Settlement::ack());
  this->transport_->close();
  EXPECT_EQ(this->main_.count(), 1u);
  EXPECT_EQ(this->backend_.ready_count(this->queue_), 0u);
}

REGISTER_TYPED_TEST_SUITE_P(
    TransportConformance, Ack_EachMessageArrivesOnceAsPublishedAndLeavesTheQueue,
    Requeue_TheMessageComesBackRedeliveredWithTheSameAttempt,
    RetryLater_ComesBackAfterItsDelayWithTheNextAttempt,
    DeadLetter_ArrivesInTheDeadLetterQueueWithTheReasonHeaders,
    LostConnection_UnsettledDeliveriesTurnStaleAndComeBackOnce,
    StopConsumingThenClose_NothingIsLostAndNothingMoreArrives,
    StopConsumingOneWorkerMidStream_NothingMoreReachesItsSinkAndNothingIsLost,
    PublishErrors_NameTheirReasonAndPublishingGoesOn);

}  // namespace warren::transport::testing
