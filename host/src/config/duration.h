// Durations as written in warren.toml ("250ms", "30s", "5m", "1h", "7d", "1m30s") and back, so
// every timeout, delay and retention in the file reads the same way in error messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

namespace warren::config {

// Parses one or more <integer><unit> parts, units ms|s|m|h|d, largest unit first and each unit
// at most once ("1h30m", not "30m1h"). No sign, no spaces, no fractions. nullopt when malformed
// or when the total does not fit in Duration.
std::optional<Duration> parse_duration(std::string_view text);

// The shortest form parse_duration reads back to the same value: 90000ms -> "1m30s", 0 -> "0s".
std::string format_duration(Duration duration);

// What a duration looks like, for "must be a duration ..." messages.
inline constexpr std::string_view kDurationSyntaxHint =
    "a duration: an integer and a unit among ms, s, m, h, d (\"250ms\", \"30s\", \"5m\", "
    "\"1h30m\", \"7d\")";

}  // namespace warren::config
