// Which message a crash is blamed on, across restarts of the host: the worker and queue it was
// consumed for, and its message id, or (for a message without one) a hash of its routing key and
// body. A redelivery, a broker-delayed retry and a replay from the dead-letter queue keep the
// message id, so they are the same message here.
//
// Every field has a bounded size (names and ids beyond the bound are replaced by a digest), so an
// identity always fits one crash journal slot (crash_journal_format.h) and reads back equal.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "transport/message.h"

namespace warren::runtime {

struct CrashIdentity {
  std::string worker;
  std::string queue;
  std::string key;  // "id:<message id>" or "body:<16 hex digits>"

  static constexpr std::size_t kMaxName = 128;  // worker, queue
  static constexpr std::size_t kMaxKey = 200;

  static CrashIdentity of(std::string_view worker, const transport::InboundMessage& message);
  // From its parts as read back from a journal or ledger; over-long parts are digested as of()
  // does, so the result compares equal to what of() made.
  static CrashIdentity from_parts(std::string_view worker, std::string_view queue,
                                  std::string_view key);

  // For log lines: "message id 'abc'" or "message without id (body hash 0123...)".
  std::string describe() const;

  auto operator<=>(const CrashIdentity&) const = default;
};

}  // namespace warren::runtime
