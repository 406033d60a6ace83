// See exchange_checks.h.
#include "broker/exchange_checks.h"

#include <algorithm>

namespace warren::broker {

bool ExchangeChecks::known(const std::string& exchange) const {
  return exchange.empty() || known_.contains(exchange);
}

void ExchangeChecks::park(std::shared_ptr<PendingPublish> publish) {
  const std::string exchange = publish->message().exchange;
  Publishes& waiting = parked_[exchange];
  waiting.push_back(std::move(publish));
  if (waiting.size() == 1 && checking_ != exchange &&
      std::find(queued_.begin(), queued_.end(), exchange) == queued_.end()) {
    queued_.push_back(exchange);
  }
}

std::optional<std::string> ExchangeChecks::start_next() {
  if (checking_ || queued_.empty())
    return std::nullopt;
  checking_ = std::move(queued_.front());
  queued_.pop_front();
  return checking_;
}

ExchangeChecks::Publishes ExchangeChecks::take_parked(const std::string& exchange) {
  auto it = parked_.find(exchange);
  if (it == parked_.end())
    return {};
  Publishes publishes = std::move(it->second);
  parked_.erase(it);
  return publishes;
}

ExchangeChecks::Publishes ExchangeChecks::found() {
  if (!checking_)
    return {};
  known_.insert(*checking_);
  Publishes publishes = take_parked(*checking_);
  checking_.reset();
  return publishes;
}

ExchangeChecks::Publishes ExchangeChecks::missing() {
  if (!checking_)
    return {};
  Publishes publishes = take_parked(*checking_);
  checking_.reset();
  return publishes;
}

ExchangeChecks::Publishes ExchangeChecks::take_expired(PendingPublish::Clock::time_point now) {
  Publishes expired;
  for (auto& [exchange, publishes] : parked_) {
    std::erase_if(publishes, [&](std::shared_ptr<PendingPublish>& publish) {
      if (publish->deadline() > now)
        return false;
      expired.push_back(std::move(publish));
      return true;
    });
  }
  // An exchange with nothing parked keeps its place in the queue: its check is harmless.
  std::erase_if(parked_, [](const auto& entry) { return entry.second.empty(); });
  return expired;
}

ExchangeChecks::Publishes ExchangeChecks::reset() {
  Publishes publishes;
  for (auto& [exchange, parked] : parked_) {
    for (auto& publish : parked)
      publishes.push_back(std::move(publish));
  }
  parked_.clear();
  queued_.clear();
  checking_.reset();
  known_.clear();
  return publishes;
}

std::size_t ExchangeChecks::parked() const noexcept {
  std::size_t count = 0;
  for (const auto& [exchange, publishes] : parked_)
    count += publishes.size();
  return count;
}

}  // namespace warren::broker
