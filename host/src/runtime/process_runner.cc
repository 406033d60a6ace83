// See process_runner.h.
#include "runtime/process_runner.h"

#include <system_error>
#include <thread>

#include "observability/log.h"
#include "transport/ids.h"

namespace warren::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The longest ready_for_message() waits, so the dispatcher thread ticks its heartbeat and sees a
// stop in time.
constexpr auto kLongestWait = std::chrono::milliseconds(500);
// A child asked to stop when its lane goes (drain) has this long to finish.
constexpr auto kStopTime = std::chrono::seconds(5);

// The metric label of a death: bounded ("protocol: <what>" would not be).
std::string reason_label(const std::string& reason) {
  if (reason.starts_with("protocol"))
    return "protocol";
  return reason;
}

// The label of a failed start, from WorkerStartError's text (worker_process.cc).
std::string start_failure_label(const std::string& what) {
  if (what.starts_with("init: "))
    return "init";
  constexpr std::string_view kDied = "died starting: ";
  if (const auto at = what.find(kDied); at != std::string::npos)
    return reason_label(what.substr(at + kDied.size()));
  if (what.find("startup_timeout") != std::string::npos)
    return "startup_timeout";
  return "start";
}

// Sleeps until `until` or for kLongestWait, whichever is sooner, waking early on `stopping`.
void wait_until(Clock::time_point until, const std::atomic<bool>& stopping) {
  const auto end = std::min(until, Clock::now() + kLongestWait);
  while (!stopping.load() && Clock::now() < end)
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(20), end - Clock::now()));
}

}  // namespace

class ProcessLane final : public HandlerLane {
 public:
  explicit ProcessLane(ProcessRunner& runner)
      : runner_(runner), process_(runner.executable_, runner.options_.process, runner.services_) {}

  ~ProcessLane() override {
    if (process_.running()) {
      process_.stop(Clock::now() + kStopTime);
      runner_.processes_.Decrement();
    }
  }

  bool ready_for_message(const std::atomic<bool>& stopping) override {
    if (process_.running()) {
      if (!died_idle())
        return true;
    }
    if (stopping.load())
      return false;
    if (runner_.crash_looping()) {
      wait_until(Clock::time_point::max(), stopping);
      return false;
    }
    if (Clock::now() < next_start_) {
      wait_until(next_start_, stopping);
      if (Clock::now() < next_start_ || stopping.load())
        return false;
    }
    return start();
  }

  std::optional<std::string> run(const warren_message& view,
                                 const transport::InboundMessage& message,
                                 host_abi::MessageServices& services) override {
    auto death = process_.handle(view, message.headers, services);
    if (!death)
      return std::nullopt;
    buried(death->reason);
    return death->reason;
  }

  bool takes_a_window() const noexcept override { return true; }

  Ticket submit(const warren_message& view, const transport::InboundMessage& message,
                host_abi::MessageServices& services, bool report_at_once) override {
    return process_.submit(view, message.headers, services, report_at_once);
  }

  Awaited await(Ticket ticket) override {
    isolation::WorkerProcess::Awaited awaited = process_.await(ticket);
    switch (awaited.kind) {
      case isolation::WorkerProcess::Awaited::Kind::ran:
        return Awaited{Awaited::Kind::ran, {}, awaited.ran_for};
      case isolation::WorkerProcess::Awaited::Kind::not_run:
        return Awaited{Awaited::Kind::not_run, {}, {}};
      case isolation::WorkerProcess::Awaited::Kind::died:
        break;
    }
    buried(awaited.reason);
    return Awaited{Awaited::Kind::died, std::move(awaited.reason), {}};
  }

 private:
  bool start() {
    try {
      process_.start();
    } catch (const std::exception& e) {  // WorkerStartError, or the kernel refused the spawn
      const std::string what = e.what();
      observability::log(observability::LogLevel::error,
                         observability::LogFields::for_worker(runner_.options_.worker),
                         "worker process failed to start: " + what);
      next_start_ = Clock::now() + runner_.child_died(start_failure_label(what), what, false);
      return false;
    }
    const isolation::Hello& hello = process_.hello();
    observability::log(
        started_before_ ? observability::LogLevel::warn : observability::LogLevel::info,
        observability::LogFields::for_worker(runner_.options_.worker),
        std::string(started_before_ ? "worker process started again" : "worker process started") +
            " (pid " + std::to_string(process_.pid()) + "): plugin " + hello.plugin_name + " " +
            hello.plugin_version);
    runner_.child_started(started_before_, hello);
    started_before_ = true;
    return true;
  }

  // The child died running a message: counted, and the next one starts after the delay.
  void buried(const std::string& reason) {
    runner_.processes_.Decrement();
    next_start_ = Clock::now() + runner_.child_died(reason, reason, true);
  }

  // A child that died between messages (killed from outside) is buried here, blaming nothing,
  // rather than taking the blame for the next message it would be given.
  bool died_idle() {
    const pid_t pid = process_.pid();
    const std::optional<isolation::WorkerDeath> death = process_.bury_if_dead();
    if (!death)
      return false;
    observability::log(observability::LogLevel::warn,
                       observability::LogFields::for_worker(runner_.options_.worker),
                       "worker process " + std::to_string(pid) + " died (" + death->reason +
                           ") with no message in it");
    runner_.processes_.Decrement();
    next_start_ =
        Clock::now() + runner_.child_died(death->reason, "died idle: " + death->reason, false);
    return true;
  }

  ProcessRunner& runner_;
  isolation::WorkerProcess process_;
  Clock::time_point next_start_{};
  bool started_before_ = false;
};

ProcessRunner::ProcessRunner(const isolation::HeldExecutable& executable,
                             ProcessRunnerOptions options, host_abi::WorkerServices& services,
                             observability::Metrics& metrics)
    : executable_(executable),
      options_(std::move(options)),
      services_(services),
      metrics_(metrics),
      processes_(metrics.plugin_processes(options_.worker)),
      crash_loop_gauge_(metrics.plugin_crashloop(options_.worker)),
      policy_(options_.restarts) {
  metrics.plugin_restarts(options_.worker);  // exposed at 0 from the start
  crash_loop_gauge_.Set(0);
}

ProcessRunner::~ProcessRunner() = default;

std::unique_ptr<HandlerLane> ProcessRunner::lane(std::size_t) {
  return std::make_unique<ProcessLane>(*this);
}

std::string ProcessRunner::crash_loop_reason() const {
  std::lock_guard lock(mutex_);
  return crash_loop_reason_;
}

int ProcessRunner::count_crash(const CrashIdentity& identity) {
  std::lock_guard lock(mutex_);
  return ++crashes_[identity];
}

void ProcessRunner::forget_crashes(const CrashIdentity& identity) {
  std::lock_guard lock(mutex_);
  crashes_.erase(identity);
}

void ProcessRunner::child_started(bool restart, const isolation::Hello& hello) {
  processes_.Increment();
  // What the children run: the host never loads the plugin, so it learns this from each Hello
  // (the same for every child: they load the bytes the host held).
  metrics_.set_plugin_info(hello.plugin_name, hello.plugin_version, options_.worker);
  if (restart)
    metrics_.plugin_restarts(options_.worker).Increment();
  std::lock_guard lock(mutex_);
  policy_.started(Clock::now());
}

std::chrono::milliseconds ProcessRunner::child_died(const std::string& reason,
                                                    const std::string& detail,
                                                    bool blamed_a_message) {
  metrics_.plugin_crashes(options_.worker, reason_label(reason)).Increment();
  std::chrono::milliseconds delay;
  bool loop_began = false;
  std::string why;
  {
    std::lock_guard lock(mutex_);
    delay = policy_.died(Clock::now(), blamed_a_message, transport::random_unit());
    if (policy_.crash_loop() && !crash_loop_.load()) {
      crash_loop_reason_ = "worker '" + options_.worker +
                           "': crash loop: its worker processes died " +
                           std::to_string(options_.restarts.loop_deaths) +
                           " times within a minute with no message to blame (last: " + detail +
                           "); it stopped consuming until a reload or restart";
      why = crash_loop_reason_;
      crash_loop_.store(true);
      loop_began = true;
    }
  }
  if (loop_began) {
    crash_loop_gauge_.Set(1);
    observability::log(observability::LogLevel::error,
                       observability::LogFields::for_worker(options_.worker), why);
    if (on_crash_loop_)
      on_crash_loop_(why);
  }
  return delay;
}

}  // namespace warren::runtime
