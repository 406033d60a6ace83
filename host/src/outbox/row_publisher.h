// The relay's view of the broker (a seam for tests; broker_row_publisher.h is the RabbitMQ one):
// publish a batch with confirms and say, per message, confirmed / failed / not attempted.
#pragma once

#include <vector>

#include "outbox/batch_verdict.h"
#include "transport/transport.h"

namespace warren::outbox {

class RowPublisher {
 public:
  virtual ~RowPublisher() = default;
  // Connected and not blocked by a broker alarm: worth claiming rows for.
  virtual bool ready() const = 0;
  // Publishes every message, then waits for each verdict. outcomes[i] is for messages[i].
  virtual std::vector<PublishOutcome> publish_all(
      const std::vector<transport::OutboundMessage>& messages) = 0;
};

}  // namespace warren::outbox
