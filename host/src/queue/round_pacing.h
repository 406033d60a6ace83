// RoundPacing: when the SQLite queue engine writes a worker's settlements, chosen by measuring.
//
// A round is one transaction: the settlements queued so far, then a claim that refills the
// worker's prefetch. Two ways to pace rounds while a worker has a backlog:
//  - overlap: a round as soon as half the prefetch is settled. The worker handles one half while
//    the engine writes the other: neither waits, but each transaction carries half a prefetch and
//    touches the table in two places (the rows settled, the rows claimed), so more pages are
//    written per message;
//  - whole batches: a round when the worker has settled everything it holds. Each transaction
//    carries a whole prefetch (half the transactions and pages per message), but the worker
//    waits for the round and the engine for the worker.
// Which is faster depends on what the machine makes expensive (a commit's fsync and pages, or
// the handler's time per message), so it is measured, not guessed: while the worker has a
// backlog (its claims come back full), each way is tried for a while, the faster is kept for
// longer, then both are tried again. Without a backlog, overlap (the lower latency) is used.
// Not thread-safe: the engine calls it under its lock.
#pragma once

#include <chrono>
#include <cstddef>

namespace warren::queue {

class RoundPacing {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Mode { overlap, whole_batches };

  struct Timing {
    Clock::duration trial = std::chrono::milliseconds(500);  // measured time in each way
    Clock::duration keep = std::chrono::seconds(5);          // the faster way, before trying again
    int warmup_rounds = 2;  // rounds after a switch that are not measured (the pipeline refills)
  };

  RoundPacing() : RoundPacing(Timing{}) {}
  explicit RoundPacing(Timing timing) : timing_(timing) {}

  Mode mode() const noexcept { return mode_; }
  // The rates (rows per second) measured in the last trial of each way; 0 before the first.
  double overlap_rate() const noexcept { return overlap_rate_; }
  double whole_batches_rate() const noexcept { return whole_rate_; }

  // After each round that claimed for the worker: how many of its settlements the round wrote,
  // and whether its claim came back full (the worker has a backlog).
  void record_round(std::size_t settled, bool backlog, Clock::time_point now);

 private:
  enum class Phase { idle, trying_overlap, trying_whole, keeping };

  void start_trial(Phase phase, Mode mode, Clock::time_point now);
  void finish_trial(Clock::time_point now);

  const Timing timing_;
  Mode mode_ = Mode::overlap;
  Phase phase_ = Phase::idle;
  int warmup_left_ = 0;
  std::size_t measured_rows_ = 0;
  Clock::time_point measured_since_{};
  Clock::time_point keep_until_{};
  double overlap_rate_ = 0;  // rows per second in the last trial of each way
  double whole_rate_ = 0;
};

}  // namespace warren::queue
