// How a worker process ended, in the words metrics and dead-letter headers use: "SIGSEGV",
// "SIGABRT", "killed" (SIGKILL from outside: the OOM killer without a cgroup to tell, an
// operator; WorkerProcess names it "oom" when the child's cgroup counted an OOM kill), "oom"
// (warren-worker's own exit when an allocation fails past memory_max, kExitOutOfMemory), "exit N";
// the host itself names the deaths it caused ("timeout", "wedged").
#pragma once

#include <signal.h>

#include <string>

namespace warren::isolation {

struct ChildExit {
  bool by_signal = false;
  int code = 0;  // the exit status, or the signal number
  bool core_dumped = false;

  // "SIGSEGV", "killed", "oom", "exit 3", "exit 0".
  std::string reason() const;
  bool clean() const noexcept { return !by_signal && code == 0; }
};

// From waitid()'s siginfo (si_code CLD_EXITED, CLD_KILLED or CLD_DUMPED).
ChildExit child_exit_from(const siginfo_t& info) noexcept;

// "SIGSEGV" for SIGSEGV, "SIG34" for a number without a name.
std::string signal_name(int signal);

}  // namespace warren::isolation
