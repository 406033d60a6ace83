// The dead letters of one worker in a RabbitMQ dead-letter queue, for `warren dlq`
// (transport/dead_letters.h): read through a DeadLetterBrowser, which holds every letter unacked
// so that nothing is lost if the tool dies, and replayed through a confirmed publisher.
//
// A letter is acked (removed) only after its republish is confirmed; the letters the tool does
// not move go back to the queue when it closes. The reason and the original exchange and routing
// key come from Warren's x-warren-* headers, or from the broker's x-first-death-* ones for letters
// the broker dead-lettered itself (delivery limit, TTL).
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
  // `worker_queue`, through the default exchange; without, to the letter's original exchange and
  // routing key (every queue bound there). Throws ConnectionLost, or TopologyError when the queue
  // does not exist.
  RabbitMqDeadLetters(const config::Config& config, std::string queue, std::string worker_queue,
                      bool to_worker_queue);
  ~RabbitMqDeadLetters() override;

  const std::string& queue() const override { return queue_; }
  std::string census() const override;
  std::vector<transport::DeadLetter> fetch() override;
  bool replays_into_worker_queue_only() const override { return to_worker_queue_; }
  bool replay(const transport::DeadLetter& letter, const transport::OutboundMessage& copy) override;
  std::size_t remove(const std::vector<transport::DeadLetter>& letters) override;

 private:
  const config::Config& config_;
  const std::string queue_;
  const std::string worker_queue_;
  const bool to_worker_queue_;
  DeadLetterBrowser browser_;
  // Made at the first replay; destroyed before the browser, as the replay's publishes are all
  // confirmed by then.
  std::unique_ptr<PublisherConnection> publisher_;
};

}  // namespace warren::broker
