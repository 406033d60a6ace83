// See requeue_backoff.h.
#include "broker/requeue_backoff.h"

#include <algorithm>

namespace warren::broker {

RequeueBackoff::RequeueBackoff(std::size_t workers, transport::BackoffPolicy policy,
                               std::chrono::milliseconds ceiling)
    : ceiling_(ceiling), backoffs_(workers, transport::Backoff(policy)) {}

std::chrono::milliseconds RequeueBackoff::failed(std::size_t worker, double random01) {
  std::lock_guard lock(mutex_);
  return std::min(backoffs_.at(worker).next(random01), ceiling_);
}

void RequeueBackoff::succeeded(std::size_t worker) {
  std::lock_guard lock(mutex_);
  backoffs_.at(worker).reset();
}

}  // namespace warren::broker
