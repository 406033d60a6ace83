// See subscriber_state.h.
#include "broker/subscriber_state.h"

namespace warren::broker {

SubscriberState::SubscriberState(transport::Subscription subscription,
                                 transport::BackoffPolicy retry)
    : subscription_(std::move(subscription)), queue_(subscription_.queue), backoff_(retry) {}

bool SubscriberState::consuming_as(std::string tag) {
  consumer_tag_ = std::move(tag);
  backoff_.reset();
  const bool was_reported = !reason_.empty();
  reason_.clear();
  return was_reported;
}

void SubscriberState::interrupted(std::string reason, Clock::time_point retry_at) {
  consumer_tag_.clear();
  reason_ = std::move(reason);
  retry_at_ = retry_at;
}

bool SubscriberState::failed(std::string reason, Clock::time_point now, double random01) {
  consumer_tag_.clear();
  retry_at_ = now + backoff_.next(random01);
  if (reason == reason_)
    return false;
  reason_ = std::move(reason);
  return true;
}

}  // namespace warren::broker
