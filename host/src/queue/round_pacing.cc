// See round_pacing.h.
#include "queue/round_pacing.h"

namespace warren::queue {

void RoundPacing::start_trial(Phase phase, Mode mode, Clock::time_point now) {
  phase_ = phase;
  mode_ = mode;
  warmup_left_ = timing_.warmup_rounds;
  measured_rows_ = 0;
  measured_since_ = now;
}

void RoundPacing::finish_trial(Clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - measured_since_).count();
  const double rate = seconds > 0 ? static_cast<double>(measured_rows_) / seconds : 0;
  if (phase_ == Phase::trying_overlap) {
    overlap_rate_ = rate;
    start_trial(Phase::trying_whole, Mode::whole_batches, now);
    return;
  }
  whole_rate_ = rate;
  phase_ = Phase::keeping;
  mode_ = whole_rate_ > overlap_rate_ ? Mode::whole_batches : Mode::overlap;
  keep_until_ = now + timing_.keep;
}

void RoundPacing::record_round(std::size_t settled, bool backlog, Clock::time_point now) {
  if (!backlog) {
    // The worker keeps up with the queue: nothing to measure, and the lower latency is better.
    phase_ = Phase::idle;
    mode_ = Mode::overlap;
    return;
  }
  switch (phase_) {
    case Phase::idle:
      start_trial(Phase::trying_overlap, Mode::overlap, now);
      return;
    case Phase::keeping:
      if (now >= keep_until_)
        start_trial(Phase::trying_overlap, Mode::overlap, now);
      return;
    case Phase::trying_overlap:
    case Phase::trying_whole:
      if (warmup_left_ > 0) {
        --warmup_left_;
        measured_since_ = now;  // measured from the end of the last warm-up round
        return;
      }
      measured_rows_ += settled;
      if (now - measured_since_ >= timing_.trial)
        finish_trial(now);
      return;
  }
}

}  // namespace warren::queue
