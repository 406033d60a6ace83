// See crash_identity.h.
#include "runtime/crash_identity.h"

#include <cstdint>
#include <cstdio>

#include "runtime/checksum.h"

namespace warren::runtime {
namespace {

std::string hex64(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// `text` when it is at most `limit` bytes, else its head and a digest of the whole: still
// readable in a log line, and two different long texts stay different.
std::string bounded(std::string_view text, std::size_t limit) {
  if (text.size() <= limit)
    return std::string(text);
  // Appended rather than `"~" + hex64(...)`: GCC 12 at -O3 reports a false -Wrestrict inside
  // std::string's insert for that form.
  std::string digest(1, '~');
  digest.append(hex64(fnv1a64(text)));
  std::string head(text.substr(0, limit - digest.size()));
  return head.append(digest);
}

}  // namespace

CrashIdentity CrashIdentity::of(std::string_view worker, const transport::InboundMessage& message) {
  std::string key;
  if (!message.message_id.empty()) {
    key = "id:" + message.message_id;
  } else {
    // The routing key, a separator no routing key contains, then the body.
    const std::uint64_t hash =
        fnv1a64(message.body, fnv1a64(std::string_view("\0", 1), fnv1a64(message.routing_key)));
    key = "body:" + hex64(hash);
  }
  return from_parts(worker, message.queue, key);
}

CrashIdentity CrashIdentity::from_parts(std::string_view worker, std::string_view queue,
                                        std::string_view key) {
  return CrashIdentity{bounded(worker, kMaxName), bounded(queue, kMaxName), bounded(key, kMaxKey)};
}

std::string CrashIdentity::describe() const {
  if (key.starts_with("id:"))
    return "message id '" + key.substr(3) + "'";
  if (key.starts_with("body:"))
    return "message without id (body hash " + key.substr(5) + ")";
  return "message '" + key + "'";
}

}  // namespace warren::runtime
