// Process exit codes: scripts and systemd depend on them.
#pragma once

namespace warren::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeFailure = 1;
inline constexpr int kExitBadUsageOrConfig = 2;

}  // namespace warren::cli
