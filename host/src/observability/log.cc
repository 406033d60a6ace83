// spdlog-backed implementation of log.h. The line is composed here (so JSON is real JSON with
// escaped strings) and spdlog only adds time and level in text mode and does the locked write.
#include "observability/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>

#include "observability/json_escape.h"
#include "observability/periodic_task.h"
#include "observability/rate_limiter.h"
#include "observability/terminal_escape.h"
#include "observability/timestamp.h"

namespace warren::observability {
namespace {

std::atomic<LogFormat> g_format{LogFormat::text};
// 20 errors at once, then 5 a second, per worker.
RateLimiter g_error_limiter(5.0, 20.0);

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::trace:
      return spdlog::level::trace;
    case LogLevel::debug:
      return spdlog::level::debug;
    case LogLevel::info:
      return spdlog::level::info;
    case LogLevel::warn:
      return spdlog::level::warn;
    case LogLevel::error:
      return spdlog::level::err;
    case LogLevel::critical:
      return spdlog::level::critical;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("warren", sink);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%-5l%$ %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

// Message ids, trace ids and texts (reasons, what a plugin logs) come from message content:
// escaped, so that a text line stays one line and sends nothing to the terminal tailing it.
std::string render_text(const LogFields& fields, std::string_view text) {
  std::string line;
  if (!fields.worker.empty()) {
    line += "[";
    append_terminal_safe(line, fields.worker);
    if (!fields.message_id.empty()) {
      line += " msg=";
      append_terminal_safe(line, fields.message_id);
    }
    if (fields.attempt != 0) {
      line += " attempt=";
      line += std::to_string(fields.attempt);
    }
    if (!fields.trace_id.empty()) {
      line += " trace=";
      append_terminal_safe(line, fields.trace_id);
    }
    line += "] ";
  }
  append_terminal_safe(line, text);
  return line;
}

void write(LogLevel level, const LogFields& fields, std::string_view text) {
  if (g_format.load(std::memory_order_relaxed) == LogFormat::json) {
    logger().log(to_spdlog(level), "{}", render_json_line(level, fields, text));
  } else {
    logger().log(to_spdlog(level), "{}", render_text(fields, text));
  }
}

void write_suppressed(std::string_view worker, std::uint64_t count) {
  write(LogLevel::warn, LogFields::for_worker(worker),
        "suppressed " + std::to_string(count) +
            " error messages (rate limit: 20 at once, then 5 a second)");
}

// Reports what the limiter refused since the last report, for a flood that stopped: without it,
// the count would wait for the next error of that worker, which may never come.
void report_suppressed() noexcept {
  try {
    for (const auto& [worker, count] : g_error_limiter.take_suppressed())
      write_suppressed(worker, count);
  } catch (...) {
    // Logging must never take the host down.
  }
}

// Started by the first refused error, so that processes without a flood (the CLI verbs) run no
// extra thread. A function-local static built after logger() and g_error_limiter, so destroyed
// (stopped and joined) at exit before them.
void start_suppression_reports() {
  static PeriodicTask reporter(std::chrono::seconds(1), &report_suppressed);
}

}  // namespace

void configure_logging(std::string_view level, LogFormat format) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    throw std::invalid_argument("unknown log level '" + std::string(level) + "'");
  }
  logger().set_level(parsed);
  g_format.store(format);
  logger().set_pattern(format == LogFormat::json ? "%v" : "%Y-%m-%dT%H:%M:%S.%e%z %^%-5l%$ %v");
}

bool log_enabled(LogLevel level) noexcept {
  return logger().should_log(to_spdlog(level));
}

std::string render_json_line(LogLevel level, const LogFields& fields, std::string_view text) {
  std::string line = "{\"time\":\"" + utc_now_rfc3339() + "\",\"level\":\"" +
                     std::string(to_string(level)) + "\",\"message\":";
  append_json_string(line, text);
  if (!fields.worker.empty()) {
    line += ",\"worker\":";
    append_json_string(line, fields.worker);
  }
  if (!fields.message_id.empty()) {
    line += ",\"message_id\":";
    append_json_string(line, fields.message_id);
  }
  if (fields.attempt != 0)
    line += ",\"attempt\":" + std::to_string(fields.attempt);
  if (!fields.trace_id.empty()) {
    line += ",\"trace_id\":";
    append_json_string(line, fields.trace_id);
  }
  line += "}";
  return line;
}

void log(LogLevel level, const LogFields& fields, std::string_view text) noexcept {
  try {
    if (!log_enabled(level))
      return;
    if (level >= LogLevel::error) {
      const auto decision = g_error_limiter.admit(std::string(fields.worker));
      if (!decision.allowed) {
        start_suppression_reports();
        return;
      }
      if (decision.suppressed_before > 0)
        write_suppressed(fields.worker, decision.suppressed_before);
    }
    write(level, fields, text);
  } catch (...) {
    // Logging must never take the host down.
  }
}

void flush_logs() noexcept {
  try {
    logger().flush();
  } catch (...) {
  }
}

}  // namespace warren::observability
