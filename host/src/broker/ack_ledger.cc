// See ack_ledger.h.
#include "broker/ack_ledger.h"

#include <algorithm>

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
  state.outstanding.add(tag);
  return DeliveryToken{state.incarnation.load(), channel, tag};
}

AckLedger::Verdict AckLedger::settle(const DeliveryToken& token, SettleAction action) {
  if (!is_current(token))
    return Verdict::stale;
  Channel& state = channels_[token.subscription];
  if (!state.outstanding.remove(token.tag))
    return Verdict::unknown;
  if (action != SettleAction::ack)
    return Verdict::send_now;
  state.held.push_back(token.tag);
  return Verdict::held;
}

bool AckLedger::has_held_acks(std::size_t channel) const noexcept {
  return channel < count_ && !channels_[channel].held.empty();
}

std::size_t AckLedger::singles_to_hold(std::size_t prefetch, std::size_t settlers) noexcept {
  const std::size_t ahead = settlers <= 1 ? 0 : prefetch - prefetch / settlers;
  return std::max(prefetch / 4, ahead);
}

void AckLedger::hold_singles(std::size_t channel, std::size_t at_most) {
  if (channel < count_)
    channels_[channel].singles_at_most = at_most;
}

AckPlan AckLedger::take_acks(std::size_t channel, Clock::time_point now, bool everything) {
  Channel& state = channels_[channel];
  AckPlan plan = plan_acks(state.held, state.outstanding.oldest());
  state.held.clear();  // keeps its capacity for the next batch
  if (plan.singles.empty()) {
    state.singles_since = {};
    return plan;
  }
  if (state.singles_since == Clock::time_point{})
    state.singles_since = now;
  const bool hold = !everything && plan.singles.size() <= state.singles_at_most &&
                    now - state.singles_since < kSinglesHeldFor;
  if (hold) {
    state.held.swap(plan.singles);  // sorted, all above the oldest unsettled
  } else {
    state.singles_since = {};
  }
  return plan;
}

void AckLedger::channel_lost(std::size_t channel) {
  Channel& state = channels_[channel];
  ++state.incarnation;
  state.outstanding.clear();
  state.held.clear();
  state.singles_since = {};
}

void AckLedger::connection_lost() {
  for (std::size_t channel = 0; channel < count_; ++channel)
    channel_lost(channel);
}

std::size_t AckLedger::outstanding(std::size_t channel) const noexcept {
  return channel < count_ ? channels_[channel].outstanding.size() : 0;
}

}  // namespace warren::broker
