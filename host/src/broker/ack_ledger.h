// The consuming connection's account of its deliveries, channel by channel: which are still
// unsettled, which acks are held for the next batch, and which channel incarnation a delivery
// tag belongs to. Pure bookkeeping (no rabbitmq-c): the I/O thread asks it what to send.
//
// A delivery tag means something only on the channel incarnation that delivered it. When a
// channel (or the whole connection) is lost, its incarnation moves on, and a settlement naming an
// older one is stale: it is dropped and counted (the broker requeued the message and delivers it
// again), never sent on the new channel, where the same tag names another message.
//
// Acks are held until take_acks() (after a batch of settlements) and go out as one `multiple`
// ack for every held tag below the oldest delivery still unsettled, plus single acks for the rest
// (ack_plan.h): a `multiple` ack never covers an unsettled delivery. Requeues and rejects are
// sent at once by the caller, so a multiple ack sent after them may span their tags harmlessly.
//
// With several handlers on a channel (concurrency, or worker processes), one that finishes ahead
// of another acks above the oldest unsettled delivery, and each such ack would be a frame of its
// own that the broker's queue process handles alone. A channel may hold a few of them back
// (hold_singles): up to what the other handlers may settle ahead of the oldest's
// (singles_to_hold), for at most kSinglesHeldFor, in the hope that the oldest is settled
// meanwhile and one `multiple` ack then covers them all. They go out as
// singles when there would be more, when they are older than that, or when everything is flushed
// (a cancel, a close). A held ack is only late: a host that dies with it held has its messages
// redelivered, as it would a moment earlier.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "broker/ack_plan.h"
#include "broker/outstanding_tags.h"

namespace warren::broker {

// One delivery: the channel (by subscription index), its incarnation then, and the tag.
struct DeliveryToken {
  std::uint64_t incarnation = 0;
  std::size_t subscription = 0;
  std::uint64_t tag = 0;
};

enum class SettleAction { ack, requeue, reject };

class AckLedger {
 public:
  using Clock = std::chrono::steady_clock;
  // How long acks above the oldest unsettled delivery may wait for it.
  static constexpr std::chrono::milliseconds kSinglesHeldFor{2};

  // Channels 0..channels-1 (one per subscription), each at incarnation 1, holding no single.
  explicit AckLedger(std::size_t channels);

  // `channel` may hold up to `at_most` acks above its oldest unsettled delivery (0: none).
  void hold_singles(std::size_t channel, std::size_t at_most);
  // How many a channel of `prefetch` settled by `settlers` handlers side by side holds: what all
  // but the oldest's handler may have settled ahead of it, (settlers - 1) / settlers of the
  // prefetch (two worker processes each take a window of half the prefetch, and the one that
  // finishes first would otherwise ack its whole window as singles), and a quarter at least.
  static std::size_t singles_to_hold(std::size_t prefetch, std::size_t settlers) noexcept;

  std::size_t channels() const noexcept { return count_; }

  // From any thread: a channel's incarnation now, and whether a token still belongs to it.
  std::uint64_t incarnation(std::size_t channel) const noexcept;
  bool is_current(const DeliveryToken& token) const noexcept;

  // The rest is for the I/O thread only.

  // A delivery arrived on `channel`: outstanding until settled. Its token for the runtime.
  DeliveryToken delivered(std::size_t channel, std::uint64_t tag);

  enum class Verdict {
    stale,     // an older incarnation (or no such channel): drop it and count it
    unknown,   // not outstanding (settled twice): ignore it
    held,      // an ack: held for take_acks()
    send_now,  // a requeue or reject: send it now (basic.nack with requeue / basic.reject)
  };
  // Records a settlement; the verdict says what to send.
  Verdict settle(const DeliveryToken& token, SettleAction action);

  bool has_held_acks(std::size_t channel) const noexcept;
  // The acks to send for what `channel` holds; they are no longer held, except the singles the
  // channel may still hold at `now` (none with `everything`).
  AckPlan take_acks(std::size_t channel, Clock::time_point now = Clock::now(),
                    bool everything = false);

  // The channel is gone (closed by the broker, or with its connection): a new incarnation, with
  // nothing outstanding and no acks held (the broker requeues all of it).
  void channel_lost(std::size_t channel);
  void connection_lost();

  std::size_t outstanding(std::size_t channel) const noexcept;

 private:
  struct Channel {
    std::atomic<std::uint64_t> incarnation{1};
    OutstandingTags outstanding;        // delivered, not settled
    std::vector<std::uint64_t> held;    // settled by ack, not sent yet
    std::size_t singles_at_most = 0;    // hold_singles()
    Clock::time_point singles_since{};  // when the singles held now were first held back
  };

  std::size_t count_;
  std::unique_ptr<Channel[]> channels_;
};

}  // namespace warren::broker
