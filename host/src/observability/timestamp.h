// Wall-clock timestamps as RFC 3339 UTC text with milliseconds ("2026-11-29T22:31:16.123Z"),
// for log lines and the x-warren-*-at headers.
#pragma once

#include <string>

namespace warren::observability {

std::string utc_now_rfc3339();

}  // namespace warren::observability
