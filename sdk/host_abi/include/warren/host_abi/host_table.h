// The warren_host_api table handed to every plugin, by the host and by the test harness alike:
// plain C functions that check what the plugin passes (null handles and strings, struct sizes,
// metric names and buckets, header arrays), convert it to C++ values (LogLevel, MetricType,
// OutgoingMessage, ReportedOutcome) and forward to the WorkerServices and MessageServices the
// handles stand for (see plugin_instance.h). No exception leaves them.
#pragma once

#include "warren/abi.h"

namespace warren::host_abi {

// Declares this build's ABI major and minor and its own struct_size.
const warren_host_api& host_table() noexcept;

}  // namespace warren::host_abi
