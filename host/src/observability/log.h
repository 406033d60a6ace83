// The host's logging: spdlog underneath, text or JSON lines, structured fields (worker,
// message id, attempt, trace id) and rate limiting of error floods. Every part of the host and
// every plugin (through the host API) logs through here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "warren/log_level.h"

namespace warren::observability {

// Warren's one severity scale (warren/log_level.h), shared with the plugin contexts and the
// test harness.
using LogLevel = ::warren::LogLevel;

enum class LogFormat { text, json };

struct LogFields {
  std::string_view worker;
  std::string_view message_id;
  std::uint32_t attempt = 0;  // 0: not about a message
  std::string_view trace_id;

  static LogFields for_worker(std::string_view name) { return LogFields{name, {}, 0, {}}; }
};

// Sets the level ("info", "debug"...) and format for the whole process. Throws
// std::invalid_argument on an unknown level name.
void configure_logging(std::string_view level, LogFormat format);

bool log_enabled(LogLevel level) noexcept;

// Never throws. Errors and criticals with the same worker are rate-limited: beyond a burst of
// 20, 5 a second; the refused ones are counted and reported in a "suppressed N error messages"
// warning, before the next error let through or within a second, whichever comes first (so a
// flood that stops is reported too).
void log(LogLevel level, const LogFields& fields, std::string_view text) noexcept;

inline void log_info(std::string_view text) noexcept {
  log(LogLevel::info, {}, text);
}
inline void log_warn(std::string_view text) noexcept {
  log(LogLevel::warn, {}, text);
}
inline void log_error(std::string_view text) noexcept {
  log(LogLevel::error, {}, text);
}
inline void log_debug(std::string_view text) noexcept {
  log(LogLevel::debug, {}, text);
}

// Writes everything buffered (before a fast exit).
void flush_logs() noexcept;

// Renders one line as the configured format would (for tests and the JSON formatter).
std::string render_json_line(LogLevel level, const LogFields& fields, std::string_view text);

}  // namespace warren::observability
