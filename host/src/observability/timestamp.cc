// See timestamp.h.
#include "observability/timestamp.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace warren::observability {

std::string utc_now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[40];
  const std::size_t length = std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buffer + length, sizeof(buffer) - length, ".%03dZ", static_cast<int>(millis));
  return buffer;
}

}  // namespace warren::observability
