// Picks the transport [broker] transport names. The one place that knows every implementation.
#pragma once

#include <memory>

#include "config/config.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "transport/transport.h"

namespace warren::cli {

std::unique_ptr<transport::Transport> make_transport(const config::Config& config,
                                                     observability::Metrics& metrics,
                                                     observability::Health& health);

}  // namespace warren::cli
