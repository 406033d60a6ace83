// What the host and a worker process say to each other over their socket (isolation =
// "process"). The child runs the plugin; the host keeps every broker connection, channel and
// delivery tag, so the child sees messages by sequence number only, and everything a handler
// asks of its host (a publish, a log line, a metric) travels back as a frame. The frames mirror
// host_abi/services.h: the child implements WorkerServices and MessageServices with them, the
// host answers them with its real ones, so a handler meets the same services in either mode.
//
//   host                                   child (warren-worker)
//   Start (worker, plugin, settings) ───►
//                                       ◄─ Hello (protocol, ABI, plugin name and version)
//                                       ◄─ Ready | InitFailed (reason)
//   Deliver (sequence, message) ────────►
//                                       ◄─ LogLine / MetricDeclare / MetricRecord /
//                                          PublishRequest (answered by PublishResult)
//                                       ◄─ Outcome (sequence, what the handler reported)
//   Cancel (sequence) ──────────────────►  (soft_timeout: stop_requested() turns true)
//   Ping ───────────────────────────────► ◄─ Pong
//   Shutdown ───────────────────────────►  (the child destroys its instance and exits 0)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "warren/host_abi/reported_outcome.h"
#include "warren/log_level.h"
#include "warren/metrics.h"
#include "warren/outgoing_message.h"

namespace warren::isolation {

// Both sides are one build; a different number means a worker binary from another package.
inline constexpr std::uint32_t kProtocolVersion = 3;

struct Start {
  std::uint32_t protocol = kProtocolVersion;
  std::string worker;
  // The plugin's file on disk, for messages: the child loads the bytes the host read from it,
  // which it finds at descriptor kChildPluginFd (worker_spawn.h), so that an upgrade on disk
  // between host start and child start cannot mix versions.
  std::string plugin_path;
  std::map<std::string, std::string> settings;
  LogLevel log_level = LogLevel::info;
  // The name the plugin must declare (the config's `plugin`), as in isolation = "thread";
  // empty: any.
  std::string plugin_name;
  friend bool operator==(const Start&, const Start&) = default;
};

struct Hello {
  std::uint32_t protocol = kProtocolVersion;
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;
  std::string plugin_name;
  std::string plugin_version;
  friend bool operator==(const Hello&, const Hello&) = default;
};

struct Ready {
  friend bool operator==(const Ready&, const Ready&) = default;
};

struct InitFailed {
  std::string reason;
  friend bool operator==(const InitFailed&, const InitFailed&) = default;
};

struct Deliver {
  std::uint64_t sequence = 0;
  std::string body;
  std::string routing_key;
  std::string exchange;
  std::string message_id;
  std::string content_type;
  std::uint32_t attempt = 1;
  bool redelivered = false;
  std::vector<std::pair<std::string, std::string>> headers;
  // Sent again after a child died: the child sends what it holds before running it and its
  // Outcome at once (never held with others), so that another death running it (even a
  // SIGKILL, which leaves no time to send anything) blames this message and no other.
  bool report_at_once = false;
  friend bool operator==(const Deliver&, const Deliver&) = default;
};

struct Outcome {
  std::uint64_t sequence = 0;
  host_abi::ReportedOutcome outcome;
  // How long the handler ran, measured in the child: the host cannot tell from when the Outcome
  // arrives, as a child sends several together.
  std::uint64_t ran_for_ns = 0;
  friend bool operator==(const Outcome& a, const Outcome& b) {
    return a.sequence == b.sequence && a.ran_for_ns == b.ran_for_ns &&
           a.outcome.kind == b.outcome.kind && a.outcome.delay == b.outcome.delay &&
           a.outcome.reason == b.outcome.reason && a.outcome.error == b.outcome.error &&
           a.outcome.exception_type == b.outcome.exception_type;
  }
};

struct PublishRequest {
  std::uint64_t sequence = 0;  // the message whose handler publishes
  std::uint64_t request = 0;   // answered by the PublishResult of the same number
  OutgoingMessage message;
  friend bool operator==(const PublishRequest&, const PublishRequest&) = default;
};

struct PublishResult {
  std::uint64_t request = 0;
  std::optional<std::string> error;  // std::nullopt: confirmed
  friend bool operator==(const PublishResult&, const PublishResult&) = default;
};

struct LogLine {
  std::uint64_t sequence = 0;  // 0: the worker's own line, outside any message
  LogLevel level = LogLevel::info;
  std::string text;
  friend bool operator==(const LogLine&, const LogLine&) = default;
};

// A metric the plugin asks for; the child numbers them and waits for MetricDeclared.
struct MetricDeclare {
  std::uint32_t metric = 0;
  MetricType type = MetricType::counter;
  std::string name;
  std::string help;
  std::vector<double> buckets;
  std::vector<std::string> label_names;
  friend bool operator==(const MetricDeclare&, const MetricDeclare&) = default;
};

struct MetricDeclared {
  std::uint32_t metric = 0;
  std::string refusal;  // empty: accepted
  friend bool operator==(const MetricDeclared&, const MetricDeclared&) = default;
};

struct MetricRecord {
  std::uint32_t metric = 0;
  std::vector<std::string> label_values;  // empty for a metric without labels
  double value = 0;
  friend bool operator==(const MetricRecord& a, const MetricRecord& b) {
    return a.metric == b.metric && a.label_values == b.label_values &&
           (a.value == b.value || (a.value != a.value && b.value != b.value));  // NaN == NaN here
  }
};

struct Cancel {
  std::uint64_t sequence = 0;
  friend bool operator==(const Cancel&, const Cancel&) = default;
};

struct Ping {
  std::uint64_t nonce = 0;
  friend bool operator==(const Ping&, const Ping&) = default;
};

struct Pong {
  std::uint64_t nonce = 0;
  friend bool operator==(const Pong&, const Pong&) = default;
};

struct Shutdown {
  friend bool operator==(const Shutdown&, const Shutdown&) = default;
};

using Frame = std::variant<Start, Hello, Ready, InitFailed, Deliver, Outcome, PublishRequest,
                           PublishResult, LogLine, MetricDeclare, MetricDeclared, MetricRecord,
                           Cancel, Ping, Pong, Shutdown>;

class FrameWriter;  // frame_codec.h

std::string encode(const Frame& frame);
// The same bytes, appended by OUT (a packet being filled: PacketWriter::add_encoded).
void encode_to(const Frame& frame, FrameWriter& out);

// A Deliver's fields, viewed where they are (the host's message): encode_deliver() gives the
// bytes encode(Deliver{...}) would, without copying each field into a Deliver first.
struct DeliverFields {
  std::uint64_t sequence = 0;
  std::string_view body, routing_key, exchange, message_id, content_type;
  std::uint32_t attempt = 1;
  bool redelivered = false;
  const std::vector<std::pair<std::string, std::string>>& headers;
  bool report_at_once = false;
};
std::string encode_deliver(const DeliverFields& fields);
void encode_deliver_to(const DeliverFields& fields, FrameWriter& out);

// Throws FrameError (frame_codec.h) naming what is wrong: an unknown type, a truncated field,
// an enum value out of range, bytes past the end.
Frame decode(std::string_view bytes);
// "Deliver", "Outcome", ...: for log lines and errors.
std::string_view frame_name(const Frame& frame) noexcept;

}  // namespace warren::isolation
