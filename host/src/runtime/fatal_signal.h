// Records which fatal signal ended the process, for the next start's log and crash ledger. The
// handler only stores the signal number into the crash journal's mapped header (a lock-free
// atomic store: async-signal-safe), puts back the disposition that was there before (the default
// action, or a sanitizer's handler in test builds) and lets the signal take its course: the
// process dies of the same signal, exit status and core dump as without the handler.
//
// SIGKILL cannot be caught: a kill -9 (or the OOM killer) leaves the signal unknown. A stack
// overflow cannot run the handler either (no alternate stack) and dies unrecorded.
#pragma once

#include <cstdint>
#include <string>

namespace warren::runtime {

// Installs the handler for SIGSEGV, SIGABRT, SIGBUS, SIGFPE and SIGILL, storing into `word`
// (which stays mapped until the process ends). Once per process; later calls only move `word`.
void record_fatal_signals_at(std::int32_t* word) noexcept;
// Stops storing into `word` (about to be unmapped) if that is where signals are recorded; the
// handler stays and only lets the signal take its course.
void stop_recording_fatal_signals_at(std::int32_t* word) noexcept;

// "SIGSEGV", "SIGABRT"...; "signal N" for others; "unknown" for 0.
std::string signal_name(int signal);

}  // namespace warren::runtime
