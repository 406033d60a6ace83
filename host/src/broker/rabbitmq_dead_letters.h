// The dead letters of one worker in a RabbitMQ dead-letter queue, for `warren dlq`
// (transport/dead_letters.h): read one at a time through a DeadLetterBrowser, which holds each
// letter unacked so that nothing is lost if the tool dies, and replayed through a confirmed
// publisher.
//
// A letter is acked (removed) only after its republish is confirmed. A letter the tool read but
// leaves dead (peek, list, the ones --where or another worker's name passes over) is not handed
// back to the queue: on a quorum queue every return counts as a delivery, and a delivery limit
// (`x-delivery-limit`, or a policy's `delivery-limit`, which no queue argument can override)
// would drop the letter after a few looks, or dead-letter it away. keep() publishes an
// identical copy (every property and typed header, minus the broker's x-delivery-count) to the
// tail of the queue, waits for its confirm, and only then acks the letter read: browsing moves
// letters to the tail, it never spends their deliveries, and a tool killed between the confirm
// and the ack leaves a duplicate, never a gap. Only letters the tool reads move: a
// `peek --limit 3` reads three (and those it skips). The reason and the original exchange and
// routing key come from Warren's x-warren-* headers, or from the broker's x-first-death-* ones for
// letters the broker dead-lettered itself (delivery limit, TTL).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "broker/dead_letter_browser.h"
#include "broker/publisher_connection.h"
#include "config/config.h"
#include "transport/dead_letters.h"

namespace warren::broker {

class RabbitMqDeadLetters final : public transport::DeadLetters {
 public:
  // Connects to the broker and opens `queue`. With `to_worker_queue`, replay() delivers only to
  // `worker_queue`, through the default exchange (an empty `worker_queue`: to the queue each
  // letter was dead-lettered from, as its x-warren-queue or x-first-death-queue header says, or
  // its original route when neither does); without, to the letter's original exchange and
  // routing key (every queue bound there). Throws ConnectionLost, or TopologyError when the queue
  // does not exist.
  RabbitMqDeadLetters(const config::Config& config, std::string queue, std::string worker_queue,
                      bool to_worker_queue);
  ~RabbitMqDeadLetters() override;

  const std::string& queue() const override { return queue_; }
  std::string census() const override;
  std::optional<transport::DeadLetter> next() override;
  void keep(const transport::DeadLetter& letter) override;
  bool replays_into_worker_queue_only() const override { return to_worker_queue_; }
  bool replay(const transport::DeadLetter& letter, const transport::OutboundMessage& copy) override;
  std::size_t remove(const std::vector<transport::DeadLetter>& letters) override;

 private:
  const config::Config& config_;
  const std::string queue_;
  const std::string worker_queue_;
  const bool to_worker_queue_;
  DeadLetterBrowser browser_;
  PublisherConnection& publisher();

  // Made at the first replay or keep; destroyed before the browser, as the replay's publishes are
  // all confirmed by then.
  std::unique_ptr<PublisherConnection> publisher_;
};

}  // namespace warren::broker
