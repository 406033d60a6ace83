// See solo_gate.h.
#include "runtime/solo_gate.h"

namespace warren::runtime {

SoloGate::Pass::~Pass() {
  if (gate_ != nullptr)
    gate_->release(alone_);
}

SoloGate::Pass SoloGate::shared() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !alone_running_ && alone_waiting_ == 0; });
  ++shared_running_;
  return Pass(this, false);
}

SoloGate::Pass SoloGate::alone() {
  std::unique_lock lock(mutex_);
  ++alone_waiting_;
  changed_.wait(lock, [&] { return !alone_running_ && shared_running_ == 0; });
  --alone_waiting_;
  alone_running_ = true;
  return Pass(this, true);
}

int SoloGate::waiting_alone() const {
  std::lock_guard lock(mutex_);
  return alone_waiting_;
}

void SoloGate::release(bool alone) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (alone)
      alone_running_ = false;
    else
      --shared_running_;
  }
  changed_.notify_all();
}

}  // namespace warren::runtime
