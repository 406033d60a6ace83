// The host's handle on one worker process (isolation = "process"): it starts the child and waits
// for its Ready, sends it messages, a window of several ahead if the caller wants (the child
// runs them in order, one at a time), and serves what each handler asks meanwhile (logs,
// metrics, publishes) with the real services of the message whose sequence number the request
// carries. It watches the message the child is running (the head of the window): a soft timeout
// sends Cancel, a hard timeout or a child that stops answering pings is killed, and a child that
// dies is reaped and named; the head is the one that killed it, the messages behind it were only
// buffered and did not run. One dispatcher thread uses it; the process never outlives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "isolation/worker_cgroups.h"
#include "isolation/worker_spawn.h"
#include "warren/host_abi/services.h"

namespace warren::isolation {

struct WorkerProcessOptions {
  std::string worker;
  // The plugin: its file on disk (for messages), the descriptor of the bytes the host read from
  // it (plugin/held_plugin_file.h: a sealed memory file, held by the caller as long as this
  // WorkerProcess lives), which each child gets and loads, and the name it must declare (the
  // config's; empty: any).
  std::string plugin_path;
  int plugin_fd = -1;
  std::string plugin_name;
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
  // The most memory the child may use, in bytes (0: no limit): with CGROUPS (when usable), the
  // memory.max of a leaf cgroup of its own (worker_cgroups.h: the OOM killer ends it, "oom"); else
  // its RLIMIT_DATA (an allocation past it ends the child at once, "oom"; worker/resource_limits.h
  // says what that does not cover).
  std::uint64_t memory_max = 0;
  WorkerCgroups* cgroups = nullptr;  // the host's, outliving this
  // Whether a crashing child may leave a core dump (RLIMIT_CORE left as the host's); off by
  // default: a crash loop would fill the disk.
  bool core_dumps = false;
};

// How a child ended, from the host's point of view: its signal ("SIGSEGV"), "killed", "oom"
// (an allocation failed past memory_max, or its cgroup's OOM kill), "exit N",
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

  // Runs one message in the child (submit() and await() with a window of one); its outcome
  // reaches services.report(). std::nullopt: it ran; else the child died running it (and is
  // gone: start() again for the next message).
  std::optional<WorkerDeath> handle(const warren_message& message,
                                    const std::vector<std::pair<std::string, std::string>>& headers,
                                    host_abi::MessageServices& services);

  // The window. submit() sends one message behind those in flight and returns its ticket (with
  // no child running, one that is `not_run`: start() first); SERVICES must outlive its await().
  // await() serves the child's frames, each to its own message's services, until TICKET's message
  // is done: it ran (its outcome reached services.report()), the child died running it (`died`, the
  // reason), or the child died running an earlier one, so that it never ran (`not_run`: it may go
  // to the next child as it is). Tickets may be awaited in any order, each once.
  using Ticket = std::uint64_t;
  struct Awaited {
    enum class Kind { ran, died, not_run };
    Kind kind = Kind::ran;
    std::string reason;                   // died: why (WorkerDeath::reason)
    std::chrono::nanoseconds ran_for{0};  // ran: how long, measured by the child
  };
  // REPORT_AT_ONCE: Deliver::report_at_once (a message sent again after a death).
  Ticket submit(const warren_message& message,
                const std::vector<std::pair<std::string, std::string>>& headers,
                host_abi::MessageServices& services, bool report_at_once = false);
  Awaited await(Ticket ticket);
  // Messages sent whose outcome has not come back.
  std::size_t in_flight() const noexcept { return window_.size(); }

  // Asks the child to finish (Shutdown) and waits until DEADLINE, then kills it.
  void stop(std::chrono::steady_clock::time_point deadline);

  // A child that died with no message in it (killed from outside between messages) is buried
  // and named here, as a death running one would be ("oom" when its cgroup's OOM killer sent the
  // SIGKILL); std::nullopt while it lives (or none runs).
  std::optional<WorkerDeath> bury_if_dead();

 private:
  using Clock = std::chrono::steady_clock;
  enum class Served { outcome, ready, other };
  struct InFlight {
    Ticket sequence = 0;
    host_abi::MessageServices* services = nullptr;
  };

  // Handles one frame from the child, for the message in the window whose sequence number it
  // carries (none: the worker's own, as in init). RECEIVED: when it came (an Outcome starts the
  // next message's run then).
  Served serve(Frame& frame, Clock::time_point received);
  // Writes the Delivers submitted since the last time, together.
  void send_unsent();
  host_abi::MessageServices* services_of(std::uint64_t sequence) const noexcept;
  // The child died or was killed (REASON as bury() names it): the head of the window ran it
  // into its death, the others did not run; all of them are done.
  void end_window(const std::string& reason);
  // The child is gone or must go: kill its group, reap it, and say why (OVERRIDE: the host's
  // own reason, such as "timeout").
  WorkerDeath bury(std::optional<std::string> override_reason);

  const HeldExecutable& executable_;
  WorkerProcessOptions options_;
  host_abi::WorkerServices& worker_;
  // The child's cgroup (options_.cgroups), removed after the child is reaped: declared before it.
  std::unique_ptr<CgroupLeaf> leaf_;
  std::optional<SpawnedWorker> child_;
  Hello hello_;
  std::map<std::uint32_t, host_abi::PluginMetric*> metrics_;
  std::uint64_t next_sequence_ = 1;  // across children: a ticket is never reused
  std::uint64_t next_ping_ = 1;
  std::deque<InFlight> window_;  // sent, in order; the head is the one the child runs
  // Delivers submitted, encoded, not yet written to the socket (the next await() does).
  PacketWriter unsent_;
  // When the head began to run: the outcome before it came back, or it was sent to an idle
  // child. Its timeouts count from here.
  Clock::time_point head_since_{};
  bool head_cancelled_ = false;
  // Done, not yet awaited: few at a time (each await takes its own as soon as it is done), so a
  // vector searched from the front costs less than a map's node per message.
  std::vector<std::pair<Ticket, Awaited>> done_;
};

}  // namespace warren::isolation
