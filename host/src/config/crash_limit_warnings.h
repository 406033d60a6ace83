// Whether each worker's crash accounting comes before its queue's delivery limit. A message that
// crashes the host is dead-lettered by the host after `max_crashes` deaths (runtime/crash_watch.h),
// with the reason; a quorum queue's delivery limit dead-letters whatever the broker handed out
// too often, the poison and its innocent neighbours alike. The limit is the backstop, so it must
// be higher: `warren check` and `warren run` say so when it is not.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace warren::config {

// One warning per worker whose quorum queue's delivery limit (set, or the 20 Warren sets when the
// queue has a dead-letter exchange) is not higher than the worker's max_crashes.
std::vector<std::string> crash_limit_warnings(const Config& config);

}  // namespace warren::config
