#include "isolation/child_exit.h"

#include <string.h>

#include "isolation/worker_exit_codes.h"

namespace warren::isolation {

std::string signal_name(int signal) {
  if (const char* abbreviation = ::sigabbrev_np(signal))
    return std::string("SIG") + abbreviation;
  return "SIG" + std::to_string(signal);
}

std::string ChildExit::reason() const {
  if (!by_signal && code == kExitOutOfMemory)
    return "oom";
  if (!by_signal)
    return "exit " + std::to_string(code);
  // A SIGKILL stays "killed" here even when memory_max is set: only the child's cgroup (its
  // memory.events' oom_kill, read by WorkerProcess::bury) tells the OOM killer from a kill -9.
  if (code == SIGKILL)
    return "killed";
  return signal_name(code);
}

ChildExit child_exit_from(const siginfo_t& info) noexcept {
  ChildExit exit;
  exit.by_signal = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
  exit.core_dumped = info.si_code == CLD_DUMPED;
  exit.code = info.si_status;
  return exit;
}

}  // namespace warren::isolation
