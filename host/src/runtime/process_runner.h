// isolation = "process" (issue 14): a worker's handler runs in `processes` warren-worker children,
// one per dispatcher thread, each running one message at a time with a window of more sent ahead
// (isolation/worker_process.h; the dispatcher decides how many). The host never loads the plugin
// itself.
//
// A child that dies running a message is buried and named (SIGSEGV, oom, timeout, ...); the
// message's crash count goes up (by message id, else a hash of routing key and body:
// crash_identity.h), and the dispatcher runs it again in a fresh child after the restart delay,
// or dead-letters it at max_crashes. Deaths that blame no message (before ready: a crash in init)
// make a crash loop at five in a minute: the worker stops consuming (on_crash_loop), gives back
// what it holds, and /readyz says why until a reload or restart.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "config/config.h"
#include "isolation/worker_process.h"
#include "observability/metrics.h"
#include "runtime/crash_identity.h"
#include "runtime/handler_runner.h"
#include "runtime/restart_policy.h"

namespace warren::runtime {

struct ProcessRunnerOptions {
  std::string worker;
  isolation::WorkerProcessOptions process;  // for every child of the worker
  RestartPolicy::Limits restarts;
};

class ProcessRunner final : public HandlerRunner {
 public:
  // `executable` (warren-worker, held open) and `services` (the worker's context: logs, metrics)
  // outlive the runner.
  ProcessRunner(const isolation::HeldExecutable& executable, ProcessRunnerOptions options,
                host_abi::WorkerServices& services, observability::Metrics& metrics);
  ~ProcessRunner() override;

  std::unique_ptr<HandlerLane> lane(std::size_t index) override;
  bool crash_looping() const noexcept override { return crash_loop_.load(); }

  // Called once, on the dispatcher thread that saw the crash loop begin.
  void set_on_crash_loop(std::function<void(const std::string& why)> on_crash_loop) {
    on_crash_loop_ = std::move(on_crash_loop);
  }
  // Why the worker is in a crash loop, for /readyz; empty when it is not.
  std::string crash_loop_reason() const;

  int count_crash(const CrashIdentity& identity) override;
  void forget_crashes(const CrashIdentity& identity) override;

 private:
  friend class ProcessLane;
  // A child died (`blamed_a_message`: running one) for `reason` (a metric label; `detail` says
  // more, for the log): counted; returns the delay before the next start.
  std::chrono::milliseconds child_died(const std::string& reason, const std::string& detail,
                                       bool blamed_a_message);
  void child_started(bool restart, const isolation::Hello& hello);

  const isolation::HeldExecutable& executable_;
  const ProcessRunnerOptions options_;
  host_abi::WorkerServices& services_;
  observability::Metrics& metrics_;
  prometheus::Gauge& processes_;
  prometheus::Gauge& crash_loop_gauge_;

  mutable std::mutex mutex_;
  RestartPolicy policy_;
  std::map<CrashIdentity, int> crashes_;
  std::string crash_loop_reason_;
  std::atomic<bool> crash_loop_{false};
  std::function<void(const std::string&)> on_crash_loop_;
};

}  // namespace warren::runtime
