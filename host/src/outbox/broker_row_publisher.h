// RowPublisher over a PublisherConnection of the relay's own (persistent, mandatory, confirms).
// A nack, a basic.return or a timeout while connected is a failed attempt; a publish lost with the
// connection, or timed out while the broker was unreachable or blocking publishers, was not
// really attempted and does not count against the row (except a publish to an exchange that does
// not exist, which the broker answers by closing the channel: that one is the row's fault).
#pragma once

#include <memory>

#include "broker/publisher_connection.h"
#include "outbox/row_publisher.h"

namespace warren::outbox {

class BrokerRowPublisher final : public RowPublisher {
 public:
  explicit BrokerRowPublisher(std::unique_ptr<broker::PublisherConnection> connection)
      : connection_(std::move(connection)) {}

  bool ready() const override { return connection_->connected() && !connection_->blocked(); }
  std::vector<PublishOutcome> publish_all(
      const std::vector<transport::OutboundMessage>& messages) override;

 private:
  std::unique_ptr<broker::PublisherConnection> connection_;
};

}  // namespace warren::outbox
