// Scripted: record the call, then perform the action the message asks for.
#include "scripted.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "real_segfault.h"

namespace warren::test_plugins {
namespace {

// Keeps a trace line one line: tabs and newlines inside a field become spaces.
std::string field(std::string_view text) {
  std::string clean(text);
  for (char& c : clean) {
    if (c == '\t' || c == '\n' || c == '\r')
      c = ' ';
  }
  return clean;
}

// A setting that must be a non-negative integer, if it is there.
std::optional<std::uint32_t> number_setting(const warren::PluginContext& ctx,
                                            const std::string& name) {
  const auto text = ctx.setting(name);
  if (!text)
    return std::nullopt;
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (text->empty() || error != std::errc{} || end != text->data() + text->size()) {
    throw std::invalid_argument("scripted: setting '" + name +
                                "' must be a non-negative integer, got '" + *text + "'");
  }
  return value;
}

std::chrono::milliseconds sleep_setting(const warren::PluginContext& ctx) {
  return std::chrono::milliseconds(number_setting(ctx, "sleep_ms").value_or(0));
}

bool record_time_setting(const warren::PluginContext& ctx) {
  const auto text = ctx.setting("record_time");
  if (!text || *text == "false")
    return false;
  if (*text == "true")
    return true;
  throw std::invalid_argument("scripted: setting 'record_time' must be true or false, got '" +
                              *text + "'");
}

// "seconds.microseconds" since the Unix epoch, for the record_time column.
std::string wall_clock_now() {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string fraction = std::to_string(micros % 1000000);
  fraction.insert(0, 6 - fraction.size(), '0');
  return std::to_string(micros / 1000000) + '.' + fraction;
}

// Sleeps the whole duration in small steps. A stop request is noticed (and logged once) but does
// not cut the sleep short: deciding what to do with a slow handler is the host's job.
void sleep_through_stop(std::chrono::milliseconds duration, warren::Context& ctx) {
  constexpr auto kStep = std::chrono::milliseconds(10);
  const auto deadline = std::chrono::steady_clock::now() + duration;
  bool stop_noticed = false;
  for (auto now = std::chrono::steady_clock::now(); now < deadline;
       now = std::chrono::steady_clock::now()) {
    if (!stop_noticed && ctx.stop_requested()) {
      stop_noticed = true;
      ctx.log_info("scripted: stop requested; sleeping on as scripted");
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kStep, deadline - now));
  }
}

// Waits until `path` exists (gate_file). Throws after kGateTimeout, so a forgotten gate ends as a
// retry, not a handler stuck until the host gives up on it.
void wait_for_gate(const std::string& path) {
  constexpr auto kStep = std::chrono::milliseconds(10);
  constexpr auto kGateTimeout = std::chrono::minutes(10);
  const auto deadline = std::chrono::steady_clock::now() + kGateTimeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("scripted: gate_file '" + path + "' did not appear in 10 minutes");
    std::this_thread::sleep_for(kStep);
  }
}

}  // namespace

Scripted::Scripted(warren::PluginContext& ctx)
    : worker_(ctx.worker_name()),
      default_action_(ctx.setting("default_action").value_or("ack")),
      sleep_(sleep_setting(ctx)),
      gate_file_(ctx.setting("gate_file").value_or("")),
      record_time_(record_time_setting(ctx)),
      crash_schedule_(number_setting(ctx, "crash_every")),
      actions_(ctx.counter("scripted_actions_total", "Calls by the action's name", {"action"})) {
  ScriptedAction::parse(default_action_);  // refuse a bad default now, not per message
  if (const auto fault = ctx.setting("init_action"))
    fail_init(parse_init_fault(*fault));
  if (const auto path = ctx.setting("record_file")) {
    record_fd_ = ::open(path->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (record_fd_ < 0) {
      throw std::system_error(errno, std::generic_category(),
                              "scripted: cannot open record_file '" + *path + "'");
    }
  }
}

Scripted::~Scripted() {
  if (record_fd_ >= 0)
    ::close(record_fd_);
}

void Scripted::record(const warren::Message& msg, std::string_view action) const {
  if (record_fd_ < 0)
    return;
  std::string line = field(worker_) + '\t' + field(msg.message_id()) + '\t' +
                     std::to_string(msg.attempt()) + '\t' + (msg.redelivered() ? "1" : "0") + '\t' +
                     field(action);
  if (record_time_)
    line += '\t' + wall_clock_now();
  line += '\n';
  ssize_t written = 0;
  do {
    written = ::write(record_fd_, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  if (written != static_cast<ssize_t>(line.size())) {
    throw std::system_error(written < 0 ? errno : EIO, std::generic_category(),
                            "scripted: cannot append to record_file");
  }
}

warren::Outcome Scripted::handle(const warren::Message& msg, warren::Context& ctx) {
  const std::string spec = msg.header(kActionHeader).value_or(default_action_);
  record(msg, spec);
  if (crash_schedule_.crash_now())
    test_support::real_segfault();
  ScriptedAction action;
  try {
    action = ScriptedAction::parse(spec);
  } catch (const std::invalid_argument& e) {
    throw warren::PermanentError(e.what());
  }
  actions_.inc({std::string_view(spec).substr(0, spec.find(':'))});
  ctx.log_debug("scripted: " + spec);
  if (sleep_.count() > 0)
    std::this_thread::sleep_for(sleep_);
  if (!gate_file_.empty())
    wait_for_gate(gate_file_);

  using Kind = ScriptedAction::Kind;
  switch (action.kind) {
    case Kind::ack:
      return warren::Outcome::ack();
    case Kind::retry:
      return warren::Outcome::retry();
    case Kind::retry_after:
      return warren::Outcome::retry(action.duration);
    case Kind::dead_letter:
      return warren::Outcome::dead_letter(action.text);
    case Kind::throw_std:
      throw std::runtime_error("scripted failure");
    case Kind::throw_int:
      throw 42;
    case Kind::permanent:
      throw warren::PermanentError("scripted permanent failure");
    case Kind::sleep:
      sleep_through_stop(action.duration, ctx);
      return warren::Outcome::ack();
    case Kind::abort:
      std::abort();
    case Kind::segfault:
      test_support::real_segfault();
    case Kind::fail_until:
      if (msg.attempt() < action.attempts) {
        throw std::runtime_error("scripted failure until attempt " +
                                 std::to_string(action.attempts) + " (this is attempt " +
                                 std::to_string(msg.attempt()) + ")");
      }
      return warren::Outcome::ack();
    case Kind::publish:
    case Kind::notify: {
      warren::OutgoingMessage out;
      out.exchange = action.exchange;
      out.routing_key = action.routing_key;
      out.body = msg.body();
      out.content_type = msg.content_type();
      out.mandatory = action.kind == Kind::publish;
      ctx.publish(out);  // a PublishError propagates: the message is retried
      return warren::Outcome::ack();
    }
    case Kind::hog:
      hog_memory();
    case Kind::spin:
      spin_forever();
    case Kind::ack_if_file:
      if (std::filesystem::exists(action.text))
        return warren::Outcome::ack();
      throw std::runtime_error("scripted: '" + action.text + "' does not exist yet");
  }
  throw std::logic_error("scripted: unhandled action " + spec);
}

}  // namespace warren::test_plugins
