// See malloc_tuning.h.
//
// Why: glibc gives the top of a thread's arena back with madvise(MADV_DONTNEED) as soon as more
// than 128 KiB of it is free. SQLite's statement journal (every claim of the queue engine opens
// one) allocates and frees about 220 KiB per transaction on the engine thread, so every round
// paid one madvise and some 50 page faults to get the same pages back: a third of the CPU of a
// message at prefetch 1 (bench/queue, docs/benchmarks.md). A fixed threshold of a few MiB ends
// that churn; it does not raise the peak RSS, which already holds those pages at the moment they
// are in use. Setting M_TRIM_THRESHOLD turns off glibc's sliding mmap threshold, so that one is set
// too: allocations of 1 MiB and more still get their own mapping, returned at once when freed.
#include "cli/malloc_tuning.h"

#include <malloc.h>

namespace warren::cli {
namespace {

constexpr int kTrimThreshold = 4 << 20;
constexpr int kMmapThreshold = 1 << 20;

}  // namespace

void tune_malloc_for_the_host() noexcept {
  ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
  ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
}

}  // namespace warren::cli
