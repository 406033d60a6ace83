// How long a message waits, unacked, before it is requeued when its retry or dead letter could
// not be published (issue 19, defects 1 and 6). Requeued at once, it would be back in the handler
// at once, with the same attempt, as fast as the broker can deliver it, for as long as the route
// stays broken; so it waits: the broker reconnect backoff ([broker] reconnect_initial doubling up
// to reconnect_max, with jitter), counted for each worker on its own (one worker's broken
// dead-letter exchange does not slow another) and started over by the worker's next republish
// that succeeds. Thread-safe: a worker's handler threads settle concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <vector>

#include "transport/backoff.h"

namespace warren::broker {

class RequeueBackoff {
 public:
  // Workers 0..workers-1 (the subscription indexes). No wait is longer than `ceiling`.
  RequeueBackoff(std::size_t workers, transport::BackoffPolicy policy,
                 std::chrono::milliseconds ceiling);

  // A republish of `worker` failed: how long its message waits before the requeue.
  std::chrono::milliseconds failed(std::size_t worker, double random01);
  // A republish of `worker` succeeded: its next failure waits the initial step again.
  void succeeded(std::size_t worker);

 private:
  const std::chrono::milliseconds ceiling_;
  std::mutex mutex_;
  std::vector<transport::Backoff> backoffs_;
};

}  // namespace warren::broker
