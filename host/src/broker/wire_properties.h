// The AMQP basic properties of a delivered message, kept whole so that the copies Warren publishes
// again (a retry, a dead letter, a replay) are the message its publisher sent: correlation id,
// reply-to, type, app id, priority, expiration, content encoding, timestamp, and the headers with
// their types (an integer stays an integer, a nested table a table). The transport seam carries
// them as an opaque string (transport::InboundMessage::wire_properties, AMQP's own encoding of a
// content header's properties); this file is the only one that writes and reads it.
//
// The seam's text fields stay the truth for what Warren manages: the message id, the content
// type, the delivery mode (copies are persistent) and the header list. A header whose text is
// still what its typed original renders to is sent with the original value; a new or changed one
// as a string; one that has no text form (a table, a decimal: handlers never see it) travels
// unchanged unless the text headers name it. user_id is left out: the broker refuses a publish
// whose user_id is not the publishing connection's own user.
#pragma once

#include <amqp.h>
#include <amqp_framing.h>

#include <string>
#include <string_view>

#include "broker/amqp_table.h"
#include "transport/message.h"

namespace warren::broker {

// `properties` as received, for InboundMessage::wire_properties; empty if they cannot be encoded.
std::string encode_wire_properties(const amqp_basic_properties_t& properties);

// An amqp_pool_t for as long as it lives.
class ScopedPool {
 public:
  ScopedPool() { init_amqp_pool(&pool_, 4096); }
  ~ScopedPool() { empty_amqp_pool(&pool_); }
  ScopedPool(const ScopedPool&) = delete;
  ScopedPool& operator=(const ScopedPool&) = delete;
  amqp_pool_t* get() noexcept { return &pool_; }

 private:
  amqp_pool_t pool_;
};

// The basic properties of a publish of `message`: over its wire_properties when it has them (a
// republished copy), else fresh ones stamped with the time now. Owns everything they point into.
class PublishProperties {
 public:
  // `message` must outlive this.
  explicit PublishProperties(const transport::OutboundMessage& message);
  PublishProperties(const PublishProperties&) = delete;
  PublishProperties& operator=(const PublishProperties&) = delete;

  const amqp_basic_properties_t* get() const noexcept { return &properties_; }

 private:
  ScopedPool pool_;  // the decoded original, which properties_ and headers_ point into
  AmqpTableBuilder headers_;
  amqp_basic_properties_t properties_{};
};

// The header that holds a copy's expiration while Warren keeps the copy (see suspend_expiration).
inline constexpr std::string_view kOriginalExpirationHeader = "x-warren-original-expiration";

// A copy that waits in Warren's own queues (the retry delay levels, a dead-letter queue) must not
// expire there: the broker would drop a dead letter, or move a retry out of its delay level early.
// As the broker does when it dead-letters, the expiration is taken off such a copy; it is kept in
// x-warren-original-expiration, and a replay puts it back (restore_expiration).
void suspend_expiration(transport::OutboundMessage& copy);

// Gives `copy` the expiration that `letter` held in x-warren-original-expiration, if any.
void restore_expiration(transport::OutboundMessage& copy, const transport::InboundMessage& letter);

}  // namespace warren::broker
