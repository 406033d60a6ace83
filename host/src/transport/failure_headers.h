// The x-warren-* headers a message carries when it is published again after a failure: a
// retry (its next attempt, where it first failed, the last error) or a dead letter (the reason,
// the worker and queue, when). Every transport writes the same ones, so `warren dlq`, the docs and
// plugin authors see one format whatever the transport.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "transport/message.h"
#include "transport/settlement.h"

namespace warren::transport {

// x-warren-error and x-warren-last-error hold at most this many bytes.
inline constexpr std::size_t kMaxErrorHeaderBytes = 1024;

// `text` cut to at most `limit` bytes, never inside a UTF-8 sequence.
std::string truncated_utf8(std::string_view text, std::size_t limit);

// Sets the headers of a retry of `original` (settlement.kind == retry_later): x-warren-attempt =
// next_attempt, x-warren-last-error (when there is a reason), and where absent the original
// exchange and routing key, x-warren-first-failed-at = `now` and the settlement's
// headers_if_absent; then the settlement's extra_headers.
void add_retry_headers(TextHeaders& headers, const InboundMessage& original,
                       const Settlement& settlement, std::string_view now);

// Sets the headers of a dead letter of `original`: x-warren-error (the reason, truncated),
// x-warren-attempt, x-warren-worker, x-warren-queue, x-warren-dead-lettered-at = `now`, and where
// absent the original exchange and routing key, x-warren-first-failed-at and the settlement's
// headers_if_absent; then the settlement's extra_headers. Existing values are replaced, never
// duplicated.
void add_dead_letter_headers(TextHeaders& headers, const InboundMessage& original,
                             const Settlement& settlement, std::string_view now);

}  // namespace warren::transport
