// The exchanges warren_published_total names in its `exchange` label: every exchange the
// configuration names, and the ones Warren itself publishes to. Publishes elsewhere (an outbox
// row's or a plugin's exchange, chosen by application data) count as exchange="other", so the
// number of series is bounded by the configuration, never by the traffic.
#pragma once

#include <functional>
#include <set>
#include <string>

#include "config/config.h"

namespace warren::cli {

std::set<std::string, std::less<>> published_exchange_labels(const config::Config& config);

}  // namespace warren::cli
