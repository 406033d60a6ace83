// See broker_row_publisher.h.
#include "outbox/broker_row_publisher.h"

namespace warren::outbox {

namespace {

// The broker closes the channel (404) on a publish to an exchange that does not exist: every
// publish in flight on it is lost, but only the one naming that exchange is at fault. Its row must
// count an attempt (and die after max_attempts), or it would be claimed first again and again and
// hold up every row behind it. PublisherConnection reports the close in the error text
// ("... closed the publishing channel: NOT_FOUND - no exchange 'x' in vhost '/'").
bool blames_exchange(const std::string& error, const std::string& exchange) {
  return error.find("NOT_FOUND - no exchange '" + exchange + "'") != std::string::npos;
}

}  // namespace

std::vector<PublishOutcome> BrokerRowPublisher::publish_all(
    const std::vector<runtime::OutboundMessage>& messages) {
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
    } catch (const runtime::PublishError& error) {
      using Reason = runtime::PublishError::Reason;
      const bool broker_away = !ready();
      if (blames_exchange(error.what(), messages[i].exchange)) {
        outcomes.push_back(PublishOutcome::failed(error.what()));
      } else if (error.reason() == Reason::unavailable ||
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
