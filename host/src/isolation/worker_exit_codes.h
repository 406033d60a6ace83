// The exit codes warren-worker ends with on purpose, shared by its main (which exits with them)
// and child_exit (which names them for the host). sysexits.h's numbers; not 66, ThreadSanitizer's
// own exit code.
#pragma once

namespace warren::isolation {

// Refused to start: read by the host as "the child refused", not as a crash.
inline constexpr int kExitUsage = 64;       // EX_USAGE: bad arguments, an unexpected frame
inline constexpr int kExitNoStart = 75;     // EX_TEMPFAIL: no Start frame, another protocol
inline constexpr int kExitInitFailed = 78;  // EX_CONFIG: the plugin did not load or its init threw
// An allocation failed (operator new, past memory_max): the child exits at once rather than let
// the plugin see std::bad_alloc in some half-done state. child_exit names it "oom".
inline constexpr int kExitOutOfMemory = 71;  // EX_OSERR

}  // namespace warren::isolation
