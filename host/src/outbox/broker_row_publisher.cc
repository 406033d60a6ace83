// See broker_row_publisher.h.
#include "outbox/broker_row_publisher.h"

namespace warren::outbox {

std::vector<PublishOutcome> BrokerRowPublisher::publish_all(
    const std::vector<transport::OutboundMessage>& messages) {
  std::vector<std::shared_ptr<broker::PendingPublish>> pending;
  pending.reserve(messages.size());
  for (const auto& message : messages)
    pending.push_back(connection_->send(message));

  std::vector<PublishOutcome> outcomes;
  outcomes.reserve(messages.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const auto& publish = pending[i];
    try {
      publish->wait();
      outcomes.push_back(PublishOutcome::confirmed());
    } catch (const transport::PublishError& error) {
      using Reason = transport::PublishError::Reason;
      const bool broker_away = !ready();
      // The connection went away, or the broker did not answer while away: not the row's
      // fault, no attempt counted. Anything else counts one: nacked (a missing exchange too,
      // so such a row cannot hold up the rows behind it forever), returned, or a timeout while
      // the broker is up.
      if (error.reason() == Reason::unavailable ||
          (error.reason() == Reason::timeout && broker_away)) {
        outcomes.push_back(PublishOutcome::unavailable(error.what()));
      } else {
        outcomes.push_back(PublishOutcome::failed(error.what()));
      }
    }
  }
  return outcomes;
}

}  // namespace warren::outbox
