// The host's handle on one worker process (isolation = "process"): it starts the child and waits
// for its Ready, hands it one message at a time and serves what the handler asks meanwhile (logs,
// metrics, publishes) with the host's real services, and watches it: a soft timeout sends
// Cancel, a hard timeout or a child that stops answering pings is killed, and a child that dies
// is reaped and named. One dispatcher thread uses it; the process never outlives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "isolation/worker_spawn.h"
#include "warren/host_abi/services.h"

namespace warren::isolation {

struct WorkerProcessOptions {
  std::string worker;
  std::string plugin_path;
  std::map<std::string, std::string> settings;
  LogLevel log_level = LogLevel::info;
  std::chrono::milliseconds startup_timeout{10'000};
  std::chrono::milliseconds soft_timeout{0};  // 0: never asked to stop
  std::chrono::milliseconds hard_timeout{0};  // 0: never killed for time
  // A Ping when the child has been silent this long, and "wedged" when it has not answered one
  // for wedged_after (a process stopped or stuck outside the handler: the child's watcher thread
  // answers pings while a handler runs).
  std::chrono::milliseconds ping_interval{1'000};
  std::chrono::milliseconds wedged_after{10'000};
  // The most memory the child may use, in bytes (0: no limit): its RLIMIT_DATA. An allocation
  // past it ends the child at once, "oom" (worker/resource_limits.h says what it does not
  // cover; a cgroup's memory.max would go there).
  std::uint64_t memory_max = 0;
  // Whether a crashing child may leave a core dump (RLIMIT_CORE left as the host's); off by
  // default: a crash loop would fill the disk.
  bool core_dumps = false;
};

// How a child ended, from the host's point of view: its signal ("SIGSEGV"), "killed", "oom"
// (an allocation failed past memory_max), "exit N",
// or what the host did to it ("timeout", "wedged", "protocol: ...").
struct WorkerDeath {
  std::string reason;
};

// start() failed: the child died, refused (InitFailed: "init: <reason>") or did not get ready.
class WorkerStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class WorkerProcess {
 public:
  WorkerProcess(const HeldExecutable& executable, WorkerProcessOptions options,
                host_abi::WorkerServices& worker);
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess();

  // Spawns the child and waits for Ready, serving the plugin's init (its logs and metric
  // declarations). Throws WorkerStartError with the reason.
  void start();
  bool running() const noexcept { return child_.has_value(); }
  pid_t pid() const noexcept { return child_ ? child_->pid() : -1; }
  // What the running child loaded (its Hello).
  const Hello& hello() const noexcept { return hello_; }

  // Runs one message in the child; its outcome reaches services.report(). std::nullopt: it ran;
  // else the child died running it (and is gone: start() again for the next message).
  std::optional<WorkerDeath> handle(const warren_message& message,
                                    const std::vector<std::pair<std::string, std::string>>& headers,
                                    host_abi::MessageServices& services);

  // Asks the child to finish (Shutdown) and waits until DEADLINE, then kills it.
  void stop(std::chrono::steady_clock::time_point deadline);

 private:
  using Clock = std::chrono::steady_clock;
  enum class Served { outcome, ready, other };

  // Handles one frame from the child; SERVICES null outside a message (init).
  Served serve(Frame& frame, host_abi::MessageServices* services);
  // The child is gone or must go: kill its group, reap it, and say why (OVERRIDE: the host's
  // own reason, such as "timeout").
  WorkerDeath bury(std::optional<std::string> override_reason);

  const HeldExecutable& executable_;
  WorkerProcessOptions options_;
  host_abi::WorkerServices& worker_;
  std::optional<SpawnedWorker> child_;
  Hello hello_;
  std::map<std::uint32_t, host_abi::PluginMetric*> metrics_;
  std::uint64_t next_sequence_ = 1;
  std::uint64_t next_ping_ = 1;
};

}  // namespace warren::isolation
