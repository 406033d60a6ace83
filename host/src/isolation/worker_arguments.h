// The command line of warren-worker, written by the host (worker_process) and read by the child
// (worker/worker_main), in one place so the two cannot disagree:
//   warren-worker HOST_PID [--memory-max=BYTES] [--core-dumps]
// What travels here rather than in the Start frame is what the child must apply before it loads
// the plugin and before it reads anything from the host (its own resource limits).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace warren::isolation {

struct WorkerArguments {
  pid_t host = 0;
  std::uint64_t memory_max = 0;  // bytes; 0: no limit
  bool core_dumps = false;

  // argv[1...] (argv[0] is the program).
  std::vector<std::string> to_argv() const;
  // std::nullopt, with the reason in ERROR, for a command line the host would never write.
  static std::optional<WorkerArguments> parse(int argc, const char* const* argv,
                                              std::string& error);
};

}  // namespace warren::isolation
