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
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "broker/ack_plan.h"

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
  // Channels 0..channels-1 (one per subscription), each at incarnation 1.
  explicit AckLedger(std::size_t channels);

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
  // The acks to send for what `channel` holds; they are no longer held.
  AckPlan take_acks(std::size_t channel);

  // The channel is gone (closed by the broker, or with its connection): a new incarnation, with
  // nothing outstanding and no acks held (the broker requeues all of it).
  void channel_lost(std::size_t channel);
  void connection_lost();

  std::size_t outstanding(std::size_t channel) const noexcept;

 private:
  struct Channel {
    std::atomic<std::uint64_t> incarnation{1};
    std::set<std::uint64_t> outstanding;  // delivered, not settled
    std::vector<std::uint64_t> held;      // settled by ack since the last take_acks()
  };

  std::size_t count_;
  std::unique_ptr<Channel[]> channels_;
};

}  // namespace warren::broker
