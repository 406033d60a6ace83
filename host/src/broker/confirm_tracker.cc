// See confirm_tracker.h.
#include "broker/confirm_tracker.h"

namespace warren::broker {

void ConfirmTracker::restart() {
  in_flight_.clear();
  next_sequence_ = 1;
}

std::uint64_t ConfirmTracker::sent(std::shared_ptr<PendingPublish> publish) {
  const std::uint64_t sequence = next_sequence_++;
  in_flight_.emplace(sequence, InFlight{std::move(publish), false, false, {}});
  return sequence;
}

void ConfirmTracker::returned(const std::string& message_id, const std::string& exchange,
                              const std::string& routing_key, std::string text) {
  for (auto& [sequence, entry] : in_flight_) {
    const auto& message = entry.publish->message();
    if (!entry.returned && message.message_id == message_id && message.exchange == exchange &&
        message.routing_key == routing_key) {
      entry.returned = true;
      entry.return_text = std::move(text);
      return;
    }
  }
}

std::vector<ConfirmTracker::Verdict> ConfirmTracker::acked(std::uint64_t tag, bool multiple) {
  return settle(tag, multiple, Result::confirmed);
}

std::vector<ConfirmTracker::Verdict> ConfirmTracker::nacked(std::uint64_t tag, bool multiple) {
  return settle(tag, multiple, Result::nacked);
}

std::vector<ConfirmTracker::Verdict> ConfirmTracker::settle(std::uint64_t tag, bool multiple,
                                                            Result result) {
  auto begin = in_flight_.begin();
  auto end = in_flight_.upper_bound(tag);
  if (!multiple) {
    begin = in_flight_.find(tag);
    if (begin == in_flight_.end())
      return {};
    end = std::next(begin);
  }
  std::vector<Verdict> verdicts;
  for (auto it = begin; it != end; ++it) {
    InFlight& entry = it->second;
    if (entry.answered)
      continue;
    if (entry.returned && result == Result::confirmed) {
      verdicts.push_back({std::move(entry.publish), Result::returned, ": " + entry.return_text});
    } else {
      verdicts.push_back({std::move(entry.publish), result,
                          result == Result::nacked ? " by the broker (basic.nack)" : ""});
    }
  }
  in_flight_.erase(begin, end);
  return verdicts;
}

std::vector<ConfirmTracker::Verdict> ConfirmTracker::expire(PendingPublish::Clock::time_point now,
                                                            const std::string& detail) {
  std::vector<Verdict> verdicts;
  for (auto& [sequence, entry] : in_flight_) {
    if (entry.answered || entry.publish->deadline() > now)
      continue;
    entry.answered = true;
    verdicts.push_back({entry.publish, Result::timeout, detail});
  }
  return verdicts;
}

ConfirmTracker::ChannelLoss ConfirmTracker::channel_closed(
    const std::optional<std::string>& culprit_exchange, const std::string& culprit_detail,
    const std::string& in_doubt_detail) {
  auto last = in_flight_.end();
  if (culprit_exchange) {
    for (auto it = in_flight_.begin(); it != in_flight_.end(); ++it) {
      if (it->second.publish->message().exchange == *culprit_exchange)
        last = it;
    }
  }
  ChannelLoss loss;
  bool after_last = false;
  for (auto it = in_flight_.begin(); it != in_flight_.end(); ++it) {
    InFlight& entry = it->second;
    const bool is_last = it == last;
    if (entry.answered) {  // its caller has its answer (a timeout): never sent again
      after_last = after_last || is_last;
      continue;
    }
    if (is_last) {
      loss.verdicts.push_back({std::move(entry.publish), Result::nacked, culprit_detail});
      after_last = true;
    } else if (after_last) {
      loss.unsent.push_back(std::move(entry.publish));
    } else if (entry.returned) {
      loss.verdicts.push_back(
          {std::move(entry.publish), Result::returned, ": " + entry.return_text});
    } else {
      loss.verdicts.push_back({std::move(entry.publish), Result::unavailable, in_doubt_detail});
    }
  }
  restart();
  return loss;
}

std::vector<ConfirmTracker::Verdict> ConfirmTracker::fail_all(Result result,
                                                              const std::string& detail) {
  std::vector<Verdict> verdicts;
  for (auto& [sequence, entry] : in_flight_) {
    if (!entry.answered)
      verdicts.push_back({std::move(entry.publish), result, detail});
  }
  in_flight_.clear();
  return verdicts;
}

}  // namespace warren::broker
