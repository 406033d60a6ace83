// Publisher confirms on one channel, as pure bookkeeping (no rabbitmq-c): the sequence number
// the broker gives each publish (1, 2, ... from confirm.select), which publishes a basic.ack or
// basic.nack settles (one, or with `multiple` every one up to its tag), which were returned
// unroutable first (basic.return comes before the confirm of the same publish), and which are
// past their deadline. Each call answers with the verdicts to deliver; the publisher's I/O thread
// resolves them (PendingPublish) and counts them.
//
// A publish answered early (timed out) stays tracked until its confirm arrives, so that confirm
// is not mistaken for another's, and is never answered twice.
//
// When the broker closes the channel (a publish it refuses: an exchange deleted after the
// publisher checked it, a write it does not permit), the confirms still owed die with it, and
// channel_closed() sorts the unconfirmed publishes by what can be known of them (see there).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/pending_publish.h"

namespace warren::broker {

class ConfirmTracker {
 public:
  using Result = PendingPublish::Result;
  struct Verdict {
    std::shared_ptr<PendingPublish> publish;
    Result result = Result::pending;
    std::string detail;  // appended to the caller's error message
  };

  // A new channel in confirm mode: numbering starts again at 1. Whatever was tracked belongs to
  // the old channel: fail_all() it first.
  void restart();

  // `publish` went out on the channel: its sequence number.
  std::uint64_t sent(std::shared_ptr<PendingPublish> publish);

  // basic.return: the oldest unconfirmed publish of this message id, exchange and routing key
  // was unroutable; its confirm (which follows) answers it `returned` with `text`.
  void returned(const std::string& message_id, const std::string& exchange,
                const std::string& routing_key, std::string text);

  // basic.ack / basic.nack of `tag`, or of every publish up to `tag` with `multiple`.
  std::vector<Verdict> acked(std::uint64_t tag, bool multiple);
  std::vector<Verdict> nacked(std::uint64_t tag, bool multiple);

  // Unanswered publishes whose deadline is not after `now`: timeout, with `detail`.
  std::vector<Verdict> expire(PendingPublish::Clock::time_point now, const std::string& detail);

  // What a channel.close leaves of the unconfirmed publishes: verdicts for those it settles, and
  // those the broker never read, to be sent again on the next channel (in their order).
  struct ChannelLoss {
    std::vector<Verdict> verdicts;
    std::vector<std::shared_ptr<PendingPublish>> unsent;
  };
  // The broker closed the channel over a publish to `culprit_exchange` (nullopt: the close names
  // none that is in flight). The broker handles a channel's publishes in the order they were
  // sent and, once it has sent channel.close, discards everything else on that channel unread
  // and sends no more confirms. So, of the unconfirmed publishes, with `last` the last one to
  // the culprit exchange (the one that caused the close, or one sent after it):
  // - `last` was not published: nacked with `culprit_detail`;
  // - those after `last` were never read: handed back in `unsent`;
  // - those before it were read, and may have been routed (or may be the culprit, when several
  //   went to that exchange): in doubt, unavailable with `in_doubt_detail`; except one already
  //   returned unroutable, which is `returned`.
  // Without a culprit, every unconfirmed publish is in doubt. Nothing stays tracked and the
  // numbering starts again (the next channel's confirm.select).
  ChannelLoss channel_closed(const std::optional<std::string>& culprit_exchange,
                             const std::string& culprit_detail, const std::string& in_doubt_detail);

  // The channel is gone: every unanswered publish gets `result` with `detail`; nothing stays.
  std::vector<Verdict> fail_all(Result result, const std::string& detail);

  std::size_t tracked() const noexcept { return in_flight_.size(); }
  std::uint64_t next_sequence() const noexcept { return next_sequence_; }

 private:
  struct InFlight {
    std::shared_ptr<PendingPublish> publish;
    bool answered = false;  // timed out: its confirm only removes it
    bool returned = false;
    std::string return_text;
  };
  std::vector<Verdict> settle(std::uint64_t tag, bool multiple, Result result);

  std::map<std::uint64_t, InFlight> in_flight_;  // by sequence number
  std::uint64_t next_sequence_ = 1;
};

}  // namespace warren::broker
