// See broker_row_publisher.h.
#include "outbox/broker_row_publisher.h"

namespace warren::outbox {

std::vector<PublishOutcome> BrokerRowPublisher::publish_all(
    const std::vector<runtime::OutboundMessage>& messages) {
  std::vector<std::shared_ptr<broker::PendingPublish>> pending;
  pending.reserve(messages.size());
  for (const auto& message : messages)
    pending.push_back(connection_->send(message));

  std::vector<PublishOutcome> outcomes;
  outcomes.reserve(messages.size());
  for (const auto& publish : pending) {
    try {
      publish->wait();
      outcomes.push_back(PublishOutcome::confirmed());
    } catch (const runtime::PublishError& error) {
      using Reason = runtime::PublishError::Reason;
      const bool broker_away = !ready();
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
