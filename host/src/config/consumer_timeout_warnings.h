// Whether a worker's prefetched deliveries can outlive the broker's consumer_timeout. RabbitMQ
// closes a channel whose oldest delivery stays unacknowledged longer than that (30 minutes by
// default); the worker's deliveries then go back to the queue and those already started run
// again. A prefetched delivery waits unacked in the dispatcher's inbox until a handler thread is
// free: the last of `prefetch` waits about ceil(prefetch / concurrency) handler calls for its ack.
// `warren check` and `warren run` say so when that, at the worker's max_handler_time, exceeds
// [broker] consumer_timeout (the broker's setting, which AMQP does not tell a client).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace warren::config {

// One warning per worker with max_handler_time whose ceil(prefetch / concurrency) x
// max_handler_time exceeds broker.consumer_timeout; none unless the transport is RabbitMQ.
std::vector<std::string> consumer_timeout_warnings(const Config& config);

}  // namespace warren::config
