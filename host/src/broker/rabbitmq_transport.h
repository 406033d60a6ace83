// The RabbitMQ implementation of the transport seam: a consuming connection (consumer_connection.h)
// and a publishing connection with confirms (publisher_connection.h), and the settlements the
// runtime asks for, done the broker's way:
//   ack          -> basic.ack (coalesced)
//   requeue      -> basic.nack requeue
//   retry_later  -> publish into the delay levels (delay_levels.h) with x-warren-attempt set,
//                   wait for the confirm, then ack the original: never the other way round
//   dead_letter  -> publish to the worker's dead-letter exchange with the x-warren-* headers,
//                   wait for the confirm, then ack the original
//
// When that publish fails (a memory alarm, the publisher reconnecting, a route deleted), the
// original is never rejected (on a queue without a dead-letter exchange of its own the broker
// would drop it) nor requeued at once (it would be back in the handler at once, with the same
// attempt, for as long as the route stays broken): it is requeued after a backoff
// (requeue_backoff.h), held unacked meanwhile by the consumer's I/O thread
// (deferred_settlements.h), and settle() throws SettledOtherwise saying so. A retry the broker
// returned unroutable, or refused (its delay exchange missing), also has the retry routes
// declared again (issue 19, defects 1 and 6). Only a worker allowed to lose messages
// (allow_message_loss) and without a dead-letter exchange has its dead letters rejected.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "broker/consumer_connection.h"
#include "broker/publisher_connection.h"
#include "broker/requeue_backoff.h"
#include "broker/sink_access.h"
#include "config/config.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "transport/transport.h"

namespace warren::broker {

// The consuming I/O thread runs fast handlers itself (LoopHelper, issue 17): at the end of a read
// pass it hands each sink its deliveries with deliver_all_to_helper(), and after the turn it
// helps the sinks that took them that way.
class RabbitMqTransport final : public transport::Transport, private LoopHelper {
 public:
  RabbitMqTransport(const config::Config& config, observability::Metrics* metrics,
                    observability::Health* health);
  ~RabbitMqTransport() override;

  void start(const std::vector<transport::Subscription>& subscriptions) override;
  void stop_consuming() override;
  void stop_consuming(const std::string& worker) override;
  // A reload's broker credentials (a rotated password), used from each connection's next
  // connection on; the current ones are kept. `user` empty: as configured.
  void set_credentials(const std::string& user, const std::string& password);
  void close() override;
  bool ready() const noexcept override;
  std::vector<std::string> not_ready_reasons() const override;
  void publish(const transport::OutboundMessage& message) override;

  PublisherConnection& publisher() { return *publisher_; }

 private:
  class Delivery;
  void on_delivery(const DeliveryToken& token, transport::InboundMessage message,
                   const std::string& queue);
  // The deliveries read in one pass over the socket, to each worker's sink at once: one lock and
  // one wake-up of its dispatcher for all of them, not one per message (issue 17).
  void hand_over();
  // LoopHelper.
  bool begin_help() override;
  void help(const std::function<bool()>& enough) override;
  void stood_in() override;
  // `wake` false (Delivery::settle_soon): an ack or requeue leaves the I/O thread asleep.
  void settle(const Delivery& delivery, const transport::Settlement& settlement, bool wake = true);
  // True (and the settlement dropped, logged) when the delivery's connection is gone.
  bool dropped_as_stale(const Delivery& delivery, const transport::Settlement& settlement,
                        std::string_view what_is_skipped);
  void retry_later(const Delivery& delivery, const transport::Settlement& settlement);
  void dead_letter(const Delivery& delivery, const transport::Settlement& settlement);
  // The republish for `delivery` failed: requeue it after the worker's backoff, and throw
  // SettledOtherwise with `what_failed` and what happens now.
  [[noreturn]] void requeue_after_backoff(const Delivery& delivery, const std::string& what_failed);

  const config::Config& config_;
  observability::Metrics* metrics_;
  observability::Health* health_;
  std::vector<transport::Subscription> subscriptions_;
  // Every call into a subscription's sink goes through it, so that stop_consuming() can wait
  // for those under way and refuse later ones.
  SinkAccess sinks_;
  // Per subscription: deliveries read in the current pass, not yet handed over (I/O thread only).
  std::vector<std::vector<std::unique_ptr<transport::Delivery>>> unhanded_;
  // Subscriptions whose sinks took deliveries for the helper: this turn's (I/O thread), and
  // those of the help under way (begin_help(): the helper's, and the stand-in's to wake).
  std::vector<std::size_t> to_help_;
  std::vector<std::size_t> helping_;
  std::unique_ptr<PublisherConnection> publisher_;
  std::unique_ptr<ConsumerConnection> consumer_;
  std::unique_ptr<RequeueBackoff> requeue_backoff_;  // made by start()
};

// Options shared by both connections, from [broker].
ConnectionOptions connection_options(const config::BrokerConfig& broker, const std::string& role,
                                     const std::string& host_name);
// Where and how a connection in `role` connects and reconnects, from [broker] and [host].
IoLoopOptions io_loop_options(const config::Config& config, const std::string& role);

}  // namespace warren::broker
