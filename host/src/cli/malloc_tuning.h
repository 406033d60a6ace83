// glibc malloc settings for the long-running host process.
#pragma once

namespace warren::cli {

// Keeps freed memory at the top of each thread's malloc arena (up to a few MiB) instead of handing
// it back to the kernel on every free. Called once at the start of `warren run`, before any thread.
void tune_malloc_for_the_host() noexcept;

}  // namespace warren::cli
