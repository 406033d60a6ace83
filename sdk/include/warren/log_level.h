// warren::LogLevel: the one severity scale of Warren. The host's log, the plugin contexts (through
// the host API) and the test harness's records all use it, so a level means the same everywhere.
// Plugins log at trace, debug, info, warn and error (PluginContext and Context; trace and debug
// since SDK 1.2); the host also uses critical.
#pragma once

#include <string_view>

namespace warren {

enum class LogLevel { trace, debug, info, warn, error, critical };

constexpr std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::trace:
      return "trace";
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
    case LogLevel::critical:
      return "critical";
  }
  return "invalid";
}

}  // namespace warren
