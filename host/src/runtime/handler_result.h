// The handler's checked report (host_abi::ReportedOutcome) as what the retry decision acts on
// (HandlerResult): a throw becomes a failure whose reason is "<exception type>: <what()>", a
// dead-letter without a reason gets one. The dispatcher and the test harness both turn reports
// into decisions through this, so a dead letter's reason reads the same in a test as in production.
#pragma once

#include "runtime/retry_decision.h"
#include "warren/host_abi/reported_outcome.h"

namespace warren::runtime {

HandlerResult handler_result(const host_abi::ReportedOutcome& outcome);

}  // namespace warren::runtime
