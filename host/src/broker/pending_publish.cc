// See pending_publish.h.
#include "broker/pending_publish.h"

namespace warren::broker {

const char* result_label(PendingPublish::Result result) noexcept {
  switch (result) {
    case PendingPublish::Result::pending:
      return "pending";
    case PendingPublish::Result::confirmed:
      return "confirmed";
    case PendingPublish::Result::nacked:
      return "nacked";
    case PendingPublish::Result::returned:
      return "returned";
    case PendingPublish::Result::timeout:
      return "timeout";
    case PendingPublish::Result::unavailable:
      return "unavailable";
  }
  return "unknown";
}

void PendingPublish::resolve(Result result, std::string detail) {
  std::lock_guard lock(mutex_);
  if (result_ != Result::pending)
    return;
  result_ = result;
  detail_ = std::move(detail);
  cv_.notify_all();
}

bool PendingPublish::resolved() const {
  std::lock_guard lock(mutex_);
  return result_ != Result::pending;
}

PendingPublish::Result PendingPublish::result() const {
  std::lock_guard lock(mutex_);
  return result_;
}

void PendingPublish::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return result_ != Result::pending; });
  using Reason = transport::PublishError::Reason;
  const std::string target = "publish to exchange '" + message_.exchange + "' with routing key '" +
                             message_.routing_key + "'";
  switch (result_) {
    case Result::confirmed:
    case Result::pending:
      return;
    case Result::nacked:
      throw transport::PublishError(Reason::nacked, target + " was refused" + detail_);
    case Result::returned:
      throw transport::PublishError(Reason::returned,
                                    target + " was returned: no queue is bound for it" + detail_);
    case Result::timeout:
      throw transport::PublishError(Reason::timeout,
                                    target + " was not confirmed in time" + detail_);
    case Result::unavailable:
      throw transport::PublishError(Reason::unavailable, target + " failed" + detail_);
  }
}

}  // namespace warren::broker
