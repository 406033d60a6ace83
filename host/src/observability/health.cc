// See health.h.
#include "observability/health.h"

namespace warren::observability {

LoopHeartbeat::LoopHeartbeat(std::string name, Clock::duration allowance)
    : name_(std::move(name)),
      allowance_(allowance),
      last_tick_(Clock::now().time_since_epoch().count()) {}

bool LoopHeartbeat::alive(Clock::time_point now) const noexcept {
  if (retired_.load() || idle_.load())
    return true;
  const Clock::time_point last{Clock::duration(last_tick_.load())};
  return now - last <= allowance_;
}

std::shared_ptr<LoopHeartbeat> Health::register_loop(std::string name,
                                                     LoopHeartbeat::Clock::duration allowance) {
  auto loop = std::make_shared<LoopHeartbeat>(std::move(name), allowance);
  std::lock_guard lock(mutex_);
  loops_.push_back(loop);
  return loop;
}

Health::Liveness Health::liveness() const {
  const auto now = LoopHeartbeat::Clock::now();
  Liveness result;
  std::lock_guard lock(mutex_);
  for (const auto& loop : loops_) {
    if (!loop->alive(now)) {
      result.alive = false;
      result.stalled.push_back(loop->name());
    }
  }
  return result;
}

void Health::set_readiness_probe(std::function<bool()> probe) {
  std::lock_guard lock(mutex_);
  readiness_probe_ = std::move(probe);
}

void Health::set_not_ready_reasons(std::function<std::vector<std::string>()> reasons) {
  std::lock_guard lock(mutex_);
  not_ready_reasons_ = std::move(reasons);
}

bool Health::ready() const {
  std::function<bool()> probe;
  {
    std::lock_guard lock(mutex_);
    probe = readiness_probe_;
  }
  return probe ? probe() : false;
}

Health::Readiness Health::readiness() const {
  std::function<bool()> probe;
  std::function<std::vector<std::string>()> reasons;
  {
    std::lock_guard lock(mutex_);
    probe = readiness_probe_;
    reasons = not_ready_reasons_;
  }
  Readiness result;
  result.ready = probe ? probe() : false;
  if (!result.ready && reasons)
    result.reasons = reasons();
  return result;
}

}  // namespace warren::observability
