// Whether a worker process's window that begins small should wait a moment for more messages.
//
// A worker process wakes, runs and answers once per window, and the dispatcher thread that feeds
// it wakes once for the answers, so a window of one message costs the host and the child about
// as much as a full one: while a fast broker streams deliveries a few at a time, each went out
// alone or nearly (bench/consume, quorum/200: 0.3 sendmmsg and 0.7 recv per message, and the
// host's CPU per message 1.5 times thread mode's). Gathering for kGatherFor before sending a
// window begun with less than a quarter of it lets the messages right behind it go in the same
// one: on this 2-core machine at quorum/200 (about 70k messages/s) 250 us gathers some 17.
//
// It pays only while messages stream. At a low rate nothing comes in that time, and the wait is
// latency for nothing, so it keeps a score as SpinAdvisor does (brief_spin.h): gathering goes on
// while it finds messages, and once it has missed a few times in a row it is only tried again
// every kProbeEvery-th window. Thread-safe (one per dispatcher, shared by its threads).
#pragma once

#include <chrono>
#include <cstddef>

#include "transport/brief_spin.h"

namespace warren::runtime {

class WindowGathering {
 public:
  static constexpr std::chrono::microseconds kGatherFor{250};

  // A window of `window` begun with `taken` messages: whether to wait kGatherFor for more.
  bool should_gather(std::size_t taken, std::size_t window) noexcept {
    return window > 1 && taken * 4 < window && advisor_.should_spin();
  }
  // What the wait found.
  void gathered(std::size_t found) noexcept { advisor_.record(found > 0); }

 private:
  transport::SpinAdvisor advisor_;  // its score: hits are gatherings that found messages
};

}  // namespace warren::runtime
