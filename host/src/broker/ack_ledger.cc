// See ack_ledger.h.
#include "broker/ack_ledger.h"

namespace warren::broker {

AckLedger::AckLedger(std::size_t channels)
    : count_(channels), channels_(std::make_unique<Channel[]>(channels)) {}

std::uint64_t AckLedger::incarnation(std::size_t channel) const noexcept {
  return channel < count_ ? channels_[channel].incarnation.load() : 0;
}

bool AckLedger::is_current(const DeliveryToken& token) const noexcept {
  return token.subscription < count_ &&
         token.incarnation == channels_[token.subscription].incarnation.load();
}

DeliveryToken AckLedger::delivered(std::size_t channel, std::uint64_t tag) {
  Channel& state = channels_[channel];
  state.outstanding.insert(tag);
  return DeliveryToken{state.incarnation.load(), channel, tag};
}

AckLedger::Verdict AckLedger::settle(const DeliveryToken& token, SettleAction action) {
  if (!is_current(token))
    return Verdict::stale;
  Channel& state = channels_[token.subscription];
  if (state.outstanding.erase(token.tag) == 0)
    return Verdict::unknown;
  if (action != SettleAction::ack)
    return Verdict::send_now;
  state.held.push_back(token.tag);
  return Verdict::held;
}

bool AckLedger::has_held_acks(std::size_t channel) const noexcept {
  return channel < count_ && !channels_[channel].held.empty();
}

AckPlan AckLedger::take_acks(std::size_t channel) {
  Channel& state = channels_[channel];
  AckPlan plan = plan_acks(std::move(state.held), state.outstanding);
  state.held.clear();
  return plan;
}

void AckLedger::channel_lost(std::size_t channel) {
  Channel& state = channels_[channel];
  ++state.incarnation;
  state.outstanding.clear();
  state.held.clear();
}

void AckLedger::connection_lost() {
  for (std::size_t channel = 0; channel < count_; ++channel)
    channel_lost(channel);
}

std::size_t AckLedger::outstanding(std::size_t channel) const noexcept {
  return channel < count_ ? channels_[channel].outstanding.size() : 0;
}

}  // namespace warren::broker
