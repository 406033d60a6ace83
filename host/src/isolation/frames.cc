// Each frame is its type (the variant's index, one byte) followed by its fields in declaration
// order; frame_codec.h reads and writes the fields.
#include "isolation/frames.h"

#include <array>
#include <type_traits>

#include "isolation/frame_codec.h"

namespace warren::isolation {

namespace {

constexpr std::array<std::string_view, std::variant_size_v<Frame>> kNames = {
    "Start",          "Hello",         "Ready",   "InitFailed",    "Deliver",        "Outcome",
    "PublishRequest", "PublishResult", "LogLine", "MetricDeclare", "MetricDeclared", "MetricRecord",
    "Cancel",         "Ping",          "Pong",    "Shutdown"};

// A string pair or a string needs at least its length prefix.
constexpr std::size_t kMinString = 4;

void write_strings(FrameWriter& out, const std::vector<std::string>& values) {
  out.u32(static_cast<std::uint32_t>(values.size()));
  for (const auto& value : values)
    out.bytes(value);
}

std::vector<std::string> read_strings(FrameReader& in, const char* what) {
  std::vector<std::string> values(in.count(what, kMinString));
  for (auto& value : values)
    value = in.bytes(what);
  return values;
}

void write_headers(FrameWriter& out,
                   const std::vector<std::pair<std::string, std::string>>& headers) {
  out.u32(static_cast<std::uint32_t>(headers.size()));
  for (const auto& [name, value] : headers) {
    out.bytes(name);
    out.bytes(value);
  }
}

std::vector<std::pair<std::string, std::string>> read_headers(FrameReader& in) {
  std::vector<std::pair<std::string, std::string>> headers(in.count("headers", 2 * kMinString));
  for (auto& [name, value] : headers) {
    name = in.bytes("header name");
    value = in.bytes("header value");
  }
  return headers;
}

LogLevel read_log_level(FrameReader& in) {
  std::uint8_t level = in.u8("log level");
  if (level > static_cast<std::uint8_t>(LogLevel::critical))
    throw FrameError("log level " + std::to_string(level) + " is out of range");
  return static_cast<LogLevel>(level);
}

MetricType read_metric_type(FrameReader& in) {
  std::uint32_t type = in.u32("metric type");
  switch (type) {
    case static_cast<std::uint32_t>(MetricType::counter):
    case static_cast<std::uint32_t>(MetricType::histogram):
    case static_cast<std::uint32_t>(MetricType::gauge):
      return static_cast<MetricType>(type);
    default:
      throw FrameError("metric type " + std::to_string(type) + " is unknown");
  }
}

bool read_flag(FrameReader& in, const char* what) {
  std::uint8_t flag = in.u8(what);
  if (flag > 1)
    throw FrameError(std::string(what) + " is " + std::to_string(flag) + ", not 0 or 1");
  return flag == 1;
}

std::optional<std::string> read_optional(FrameReader& in, const char* what) {
  if (!read_flag(in, what))
    return std::nullopt;
  return in.bytes(what);
}

void write_optional(FrameWriter& out, const std::optional<std::string>& value) {
  out.u8(value ? 1 : 0);
  if (value)
    out.bytes(*value);
}

void write_outcome(FrameWriter& out, const host_abi::ReportedOutcome& outcome) {
  out.u8(static_cast<std::uint8_t>(outcome.kind));
  out.u8(outcome.delay ? 1 : 0);
  if (outcome.delay)
    out.u64(static_cast<std::uint64_t>(outcome.delay->count()));
  out.bytes(outcome.reason);
  out.u32(static_cast<std::uint32_t>(outcome.error));
  out.bytes(outcome.exception_type);
}

host_abi::ReportedOutcome read_outcome(FrameReader& in) {
  host_abi::ReportedOutcome outcome;
  std::uint8_t kind = in.u8("outcome kind");
  if (kind > static_cast<std::uint8_t>(host_abi::ReportedOutcome::Kind::invalid))
    throw FrameError("outcome kind " + std::to_string(kind) + " is unknown");
  outcome.kind = static_cast<host_abi::ReportedOutcome::Kind>(kind);
  if (read_flag(in, "retry delay flag")) {
    std::uint64_t delay = in.u64("retry delay");
    if (delay > static_cast<std::uint64_t>(std::chrono::milliseconds::max().count()))
      throw FrameError("retry delay " + std::to_string(delay) + " ms is out of range");
    outcome.delay = std::chrono::milliseconds(static_cast<std::int64_t>(delay));
  }
  outcome.reason = in.bytes("outcome reason");
  std::uint32_t error = in.u32("handler error");
  switch (error) {
    case static_cast<std::uint32_t>(host_abi::HandlerError::none):
    case static_cast<std::uint32_t>(host_abi::HandlerError::std_exception):
    case static_cast<std::uint32_t>(host_abi::HandlerError::permanent):
    case static_cast<std::uint32_t>(host_abi::HandlerError::unknown):
      outcome.error = static_cast<host_abi::HandlerError>(error);
      break;
    default:
      throw FrameError("handler error " + std::to_string(error) + " is unknown");
  }
  outcome.exception_type = in.bytes("exception type");
  return outcome;
}

void write_deliver(FrameWriter& out, const DeliverFields& f) {
  out.u64(f.sequence);
  out.bytes(f.body);
  out.bytes(f.routing_key);
  out.bytes(f.exchange);
  out.bytes(f.message_id);
  out.bytes(f.content_type);
  out.u32(f.attempt);
  out.u8(f.redelivered ? 1 : 0);
  write_headers(out, f.headers);
  out.u8(f.report_at_once ? 1 : 0);
}

struct Encoder {
  FrameWriter& out;

  void operator()(const Start& f) const {
    out.u32(f.protocol);
    out.bytes(f.worker);
    out.bytes(f.plugin_path);
    out.u32(static_cast<std::uint32_t>(f.settings.size()));
    for (const auto& [key, value] : f.settings) {
      out.bytes(key);
      out.bytes(value);
    }
    out.u8(static_cast<std::uint8_t>(f.log_level));
    out.bytes(f.plugin_name);
  }
  void operator()(const Hello& f) const {
    out.u32(f.protocol);
    out.u32(f.abi_major);
    out.u32(f.abi_minor);
    out.bytes(f.plugin_name);
    out.bytes(f.plugin_version);
  }
  void operator()(const Ready&) const {}
  void operator()(const InitFailed& f) const { out.bytes(f.reason); }
  void operator()(const Deliver& f) const {
    write_deliver(
        out, DeliverFields{f.sequence, f.body, f.routing_key, f.exchange, f.message_id,
                           f.content_type, f.attempt, f.redelivered, f.headers, f.report_at_once});
  }
  void operator()(const Outcome& f) const {
    out.u64(f.sequence);
    write_outcome(out, f.outcome);
    out.u64(f.ran_for_ns);
  }
  void operator()(const PublishRequest& f) const {
    out.u64(f.sequence);
    out.u64(f.request);
    out.bytes(f.message.exchange);
    out.bytes(f.message.routing_key);
    out.bytes(f.message.body);
    out.bytes(f.message.content_type);
    out.bytes(f.message.message_id);
    write_headers(out, f.message.headers);
    out.u8(f.message.mandatory ? 1 : 0);
  }
  void operator()(const PublishResult& f) const {
    out.u64(f.request);
    write_optional(out, f.error);
  }
  void operator()(const LogLine& f) const {
    out.u64(f.sequence);
    out.u8(static_cast<std::uint8_t>(f.level));
    out.bytes(f.text);
  }
  void operator()(const MetricDeclare& f) const {
    out.u32(f.metric);
    out.u32(static_cast<std::uint32_t>(f.type));
    out.bytes(f.name);
    out.bytes(f.help);
    out.u32(static_cast<std::uint32_t>(f.buckets.size()));
    for (double bucket : f.buckets)
      out.f64(bucket);
    write_strings(out, f.label_names);
  }
  void operator()(const MetricDeclared& f) const {
    out.u32(f.metric);
    out.bytes(f.refusal);
  }
  void operator()(const MetricRecord& f) const {
    out.u32(f.metric);
    write_strings(out, f.label_values);
    out.f64(f.value);
  }
  void operator()(const Cancel& f) const { out.u64(f.sequence); }
  void operator()(const Ping& f) const { out.u64(f.nonce); }
  void operator()(const Pong& f) const { out.u64(f.nonce); }
  void operator()(const Shutdown&) const {}
};

template <typename T>
T read_frame(FrameReader& in);

template <>
Start read_frame<Start>(FrameReader& in) {
  Start f;
  f.protocol = in.u32("protocol");
  f.worker = in.bytes("worker");
  f.plugin_path = in.bytes("plugin path");
  std::uint32_t settings = in.count("settings", 2 * kMinString);
  for (std::uint32_t i = 0; i < settings; ++i) {
    std::string key = in.bytes("setting name");
    f.settings[std::move(key)] = in.bytes("setting value");
  }
  f.log_level = read_log_level(in);
  f.plugin_name = in.bytes("plugin name");
  return f;
}

template <>
Hello read_frame<Hello>(FrameReader& in) {
  Hello f;
  f.protocol = in.u32("protocol");
  f.abi_major = in.u32("ABI major");
  f.abi_minor = in.u32("ABI minor");
  f.plugin_name = in.bytes("plugin name");
  f.plugin_version = in.bytes("plugin version");
  return f;
}

template <>
Ready read_frame<Ready>(FrameReader&) {
  return {};
}

template <>
InitFailed read_frame<InitFailed>(FrameReader& in) {
  return {in.bytes("init failure reason")};
}

template <>
Deliver read_frame<Deliver>(FrameReader& in) {
  Deliver f;
  f.sequence = in.u64("sequence");
  f.body = in.bytes("body");
  f.routing_key = in.bytes("routing key");
  f.exchange = in.bytes("exchange");
  f.message_id = in.bytes("message id");
  f.content_type = in.bytes("content type");
  f.attempt = in.u32("attempt");
  f.redelivered = read_flag(in, "redelivered");
  f.headers = read_headers(in);
  f.report_at_once = read_flag(in, "report at once");
  return f;
}

template <>
Outcome read_frame<Outcome>(FrameReader& in) {
  Outcome f;
  f.sequence = in.u64("sequence");
  f.outcome = read_outcome(in);
  f.ran_for_ns = in.u64("run time");
  return f;
}

template <>
PublishRequest read_frame<PublishRequest>(FrameReader& in) {
  PublishRequest f;
  f.sequence = in.u64("sequence");
  f.request = in.u64("request");
  f.message.exchange = in.bytes("exchange");
  f.message.routing_key = in.bytes("routing key");
  f.message.body = in.bytes("body");
  f.message.content_type = in.bytes("content type");
  f.message.message_id = in.bytes("message id");
  f.message.headers = read_headers(in);
  f.message.mandatory = read_flag(in, "mandatory");
  return f;
}

template <>
PublishResult read_frame<PublishResult>(FrameReader& in) {
  PublishResult f;
  f.request = in.u64("request");
  f.error = read_optional(in, "publish error");
  return f;
}

template <>
LogLine read_frame<LogLine>(FrameReader& in) {
  LogLine f;
  f.sequence = in.u64("sequence");
  f.level = read_log_level(in);
  f.text = in.bytes("log text");
  return f;
}

template <>
MetricDeclare read_frame<MetricDeclare>(FrameReader& in) {
  MetricDeclare f;
  f.metric = in.u32("metric");
  f.type = read_metric_type(in);
  f.name = in.bytes("metric name");
  f.help = in.bytes("metric help");
  f.buckets.resize(in.count("buckets", 8));
  for (double& bucket : f.buckets)
    bucket = in.f64("bucket");
  f.label_names = read_strings(in, "label names");
  return f;
}

template <>
MetricDeclared read_frame<MetricDeclared>(FrameReader& in) {
  MetricDeclared f;
  f.metric = in.u32("metric");
  f.refusal = in.bytes("refusal");
  return f;
}

template <>
MetricRecord read_frame<MetricRecord>(FrameReader& in) {
  MetricRecord f;
  f.metric = in.u32("metric");
  f.label_values = read_strings(in, "label values");
  f.value = in.f64("value");
  return f;
}

template <>
Cancel read_frame<Cancel>(FrameReader& in) {
  return {in.u64("sequence")};
}

template <>
Ping read_frame<Ping>(FrameReader& in) {
  return {in.u64("nonce")};
}

template <>
Pong read_frame<Pong>(FrameReader& in) {
  return {in.u64("nonce")};
}

template <>
Shutdown read_frame<Shutdown>(FrameReader&) {
  return {};
}

template <std::size_t... I>
Frame decode_as(std::size_t type, FrameReader& in, std::index_sequence<I...>) {
  Frame frame;
  bool found =
      ((type == I ? (frame = read_frame<std::variant_alternative_t<I, Frame>>(in), true) : false) ||
       ...);
  if (!found)
    throw FrameError("frame type " + std::to_string(type) + " is unknown");
  return frame;
}

}  // namespace

void encode_to(const Frame& frame, FrameWriter& out) {
  out.u8(static_cast<std::uint8_t>(frame.index()));
  std::visit(Encoder{out}, frame);
}

std::string encode(const Frame& frame) {
  FrameWriter out;
  encode_to(frame, out);
  return std::move(out).take();
}

void encode_deliver_to(const DeliverFields& fields, FrameWriter& out) {
  out.u8(static_cast<std::uint8_t>(Frame(std::in_place_type<Deliver>).index()));
  write_deliver(out, fields);
}

std::string encode_deliver(const DeliverFields& fields) {
  FrameWriter out;
  encode_deliver_to(fields, out);
  return std::move(out).take();
}

Frame decode(std::string_view bytes) {
  FrameReader in(bytes);
  std::size_t type = in.u8("frame type");
  Frame frame = decode_as(type, in, std::make_index_sequence<std::variant_size_v<Frame>>{});
  in.expect_end(kNames[frame.index()].data());
  return frame;
}

std::string_view frame_name(const Frame& frame) noexcept {
  return kNames[frame.index()];
}

}  // namespace warren::isolation
