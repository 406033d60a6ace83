#include "isolation/worker_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "isolation/frame_codec.h"
#include "isolation/worker_arguments.h"

namespace warren::isolation {

namespace {

std::string_view text(warren_str value) {
  return {value.data, value.size};
}

// The time to wait in poll() from NOW until the earliest of DEADLINES (time_point::max(): none).
int poll_timeout(std::chrono::steady_clock::time_point now,
                 std::initializer_list<std::chrono::steady_clock::time_point> deadlines) {
  auto earliest = std::chrono::steady_clock::time_point::max();
  for (auto deadline : deadlines)
    earliest = std::min(earliest, deadline);
  if (earliest == std::chrono::steady_clock::time_point::max())
    return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(earliest - now).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60'000)) + 1;
}

}  // namespace

WorkerProcess::WorkerProcess(const HeldExecutable& executable, WorkerProcessOptions options,
                             host_abi::WorkerServices& worker)
    : executable_(executable), options_(std::move(options)), worker_(worker) {}

WorkerProcess::~WorkerProcess() = default;  // SpawnedWorker kills and reaps a child left behind

void WorkerProcess::start() {
  WorkerArguments arguments{::getpid(), options_.memory_max, options_.core_dumps};
  leaf_.reset();  // a stopped child's
  std::unique_ptr<CgroupLeaf> leaf;
  if (options_.cgroups != nullptr && options_.memory_max > 0) {
    try {
      leaf = options_.cgroups->leaf(options_.worker, options_.memory_max);
    } catch (const std::system_error& error) {
      throw WorkerStartError(std::string("worker process: ") + error.what());
    }
    if (leaf)
      arguments.memory_max = 0;  // the cgroup's memory.max rather than RLIMIT_DATA
  }
  child_.emplace(spawn_worker(executable_, arguments.to_argv(), options_.plugin_fd));
  leaf_ = std::move(leaf);
  if (leaf_) {
    // Before the Start frame: the child loads the plugin only after reading it.
    try {
      leaf_->add(child_->pid());
    } catch (const std::system_error& error) {
      bury("cgroup");
      throw WorkerStartError(std::string("worker process: ") + error.what());
    }
  }
  Start start_frame{kProtocolVersion,  options_.worker,    options_.plugin_path,
                    options_.settings, options_.log_level, options_.plugin_name};
  if (!child_->socket().send(start_frame, options_.startup_timeout))
    throw WorkerStartError("worker process: " + bury(std::nullopt).reason);
  auto deadline = Clock::now() + options_.startup_timeout;
  while (true) {
    auto frame =
        child_->socket().receive_within(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(deadline - Clock::now(), Clock::duration::zero())));
    if (!frame) {
      if (child_->socket().closed())
        throw WorkerStartError("worker process died starting: " + bury(std::nullopt).reason);
      bury("startup timeout");
      throw WorkerStartError("worker process not ready within startup_timeout (" +
                             std::to_string(options_.startup_timeout.count()) + " ms)");
    }
    if (auto* failed = std::get_if<InitFailed>(&*frame)) {
      std::string reason = failed->reason;
      bury(std::nullopt);
      throw WorkerStartError("init: " + reason);
    }
    if (auto* hello = std::get_if<Hello>(&*frame)) {
      if (hello->protocol != kProtocolVersion) {
        bury("protocol");
        throw WorkerStartError("warren-worker speaks protocol " + std::to_string(hello->protocol) +
                               ", this host " + std::to_string(kProtocolVersion) +
                               ": the host and warren-worker come from different packages");
      }
      hello_ = std::move(*hello);
      continue;
    }
    if (serve(*frame, Clock::now()) == Served::ready)
      return;
  }
}

host_abi::MessageServices* WorkerProcess::services_of(std::uint64_t sequence) const noexcept {
  for (const InFlight& message : window_) {
    if (message.sequence == sequence)
      return message.services;
  }
  return nullptr;
}

WorkerProcess::Served WorkerProcess::serve(Frame& frame, Clock::time_point received) {
  FrameSocket& socket = child_->socket();
  const auto reply_timeout = std::chrono::seconds(30);
  if (std::holds_alternative<Ready>(frame))
    return Served::ready;
  if (auto* outcome = std::get_if<Outcome>(&frame)) {
    // The child runs its window in order: an outcome is the head's, or the child is broken.
    if (window_.empty() || window_.front().sequence != outcome->sequence)
      throw FrameError("an outcome for message " + std::to_string(outcome->sequence) +
                       (window_.empty() ? std::string(" with none in flight")
                                        : ", not for the one running (" +
                                              std::to_string(window_.front().sequence) + ")"));
    window_.front().services->report(std::move(outcome->outcome));
    done_.emplace_back(
        outcome->sequence,
        Awaited{Awaited::Kind::ran, {}, std::chrono::nanoseconds(outcome->ran_for_ns)});
    window_.pop_front();
    head_since_ = received;  // the next one starts now, if there is one
    head_cancelled_ = false;
    return Served::outcome;
  }
  if (auto* line = std::get_if<LogLine>(&frame)) {
    if (auto* services = services_of(line->sequence))
      services->log(line->level, line->text);
    else
      worker_.log(line->level, line->text);
  } else if (auto* declare = std::get_if<MetricDeclare>(&frame)) {
    std::string refusal;
    host_abi::PluginMetric* metric =
        declare->label_names.empty()
            ? worker_.metric(declare->type, declare->name, declare->help, declare->buckets, refusal)
            : worker_.labelled_metric(declare->type, declare->name, declare->help, declare->buckets,
                                      declare->label_names, refusal);
    if (metric != nullptr)
      metrics_[declare->metric] = metric;
    else if (refusal.empty())
      refusal = "refused";
    socket.send(MetricDeclared{declare->metric, metric != nullptr ? "" : refusal}, reply_timeout);
  } else if (auto* record = std::get_if<MetricRecord>(&frame)) {
    auto found = metrics_.find(record->metric);
    if (found != metrics_.end()) {
      host_abi::PluginMetric* target = found->second;
      if (!record->label_values.empty()) {
        std::vector<std::string_view> values(record->label_values.begin(),
                                             record->label_values.end());
        target = target->series(values);
      }
      if (target != nullptr)
        target->record(record->value);
    }
  } else if (auto* publish = std::get_if<PublishRequest>(&frame)) {
    auto* services = services_of(publish->sequence);
    std::optional<std::string> error =
        services != nullptr ? services->publish(std::move(publish->message))
                            : std::optional<std::string>("publishing is for handlers, not init");
    socket.send(PublishResult{publish->request, std::move(error)}, reply_timeout);
  } else if (!std::holds_alternative<Pong>(frame)) {
    throw FrameError("unexpected " + std::string(frame_name(frame)) + " frame from the worker");
  }
  return Served::other;
}

std::optional<WorkerDeath> WorkerProcess::handle(
    const warren_message& message, const std::vector<std::pair<std::string, std::string>>& headers,
    host_abi::MessageServices& services) {
  if (!child_)
    start();
  Awaited awaited = await(submit(message, headers, services));
  if (awaited.kind == Awaited::Kind::ran)
    return std::nullopt;
  return WorkerDeath{std::move(awaited.reason)};
}

WorkerProcess::Ticket WorkerProcess::submit(
    const warren_message& message, const std::vector<std::pair<std::string, std::string>>& headers,
    host_abi::MessageServices& services, bool report_at_once) {
  const Ticket sequence = next_sequence_++;
  if (!child_) {
    done_.emplace_back(sequence, Awaited{Awaited::Kind::not_run, {}, {}});  // start() one first
    return sequence;
  }
  if (window_.empty()) {
    head_since_ = Clock::now();  // an idle child starts it as it arrives
    head_cancelled_ = false;
  }
  window_.push_back(InFlight{sequence, &services});
  // Sent by the next await(), with every other one submitted before it: one system call for a
  // refill of the window, not one a message.
  const DeliverFields fields{sequence,
                             text(message.body),
                             text(message.routing_key),
                             text(message.exchange),
                             text(message.message_id),
                             text(message.content_type),
                             message.attempt,
                             message.redelivered != 0,
                             headers,
                             report_at_once};
  unsent_.add_encoded([&](FrameWriter& out) { encode_deliver_to(fields, out); });
  return sequence;
}

void WorkerProcess::send_unsent() {
  if (unsent_.empty() || !child_)
    return;
  // A child that cannot take them is dead or stuck: await() finds out which and buries it.
  (void)child_->socket().send_packets(unsent_.packets(), options_.hard_timeout.count() > 0
                                                             ? options_.hard_timeout
                                                             : std::chrono::milliseconds(30'000));
  unsent_.clear();
}

void WorkerProcess::end_window(const std::string& reason) {
  bool head = true;
  for (const InFlight& message : window_) {
    done_.emplace_back(message.sequence, head ? Awaited{Awaited::Kind::died, reason, {}}
                                              : Awaited{Awaited::Kind::not_run, {}, {}});
    head = false;
  }
  window_.clear();
}

WorkerProcess::Awaited WorkerProcess::await(Ticket ticket) {
  auto take = [&]() -> std::optional<Awaited> {
    auto found = std::find_if(done_.begin(), done_.end(),
                              [&](const auto& entry) { return entry.first == ticket; });
    if (found == done_.end())
      return std::nullopt;
    Awaited awaited = std::move(found->second);
    done_.erase(found);
    return awaited;
  };
  auto die = [&](std::optional<std::string> override_reason) {
    end_window(bury(std::move(override_reason)).reason);
  };
  // A Deliver that could not be sent (the child dead or stuck) is no reason to stop reading: the
  // outcomes the child sent before are still to be read, and they say which messages ran. Its
  // end of stream, or its silence (no pong: wedged), comes after them.
  auto after_now = [](Clock::time_point since, std::chrono::milliseconds duration) {
    return duration.count() <= 0 ? Clock::time_point::max() : since + duration;
  };
  send_unsent();
  auto now = Clock::now();
  auto ping_at = after_now(now, options_.ping_interval);
  auto ping_sent = Clock::time_point::max();
  // A frame's arrival is read off the clock once: it starts the next message's run and puts the
  // next ping off, and the loop's deadlines that follow are measured from it too.
  bool now_is_fresh = true;
  while (true) {
    if (auto awaited = take())
      return *awaited;
    if (!child_ || window_.empty())  // not submitted, or awaited before: a caller's mistake
      return Awaited{Awaited::Kind::not_run, {}, {}};
    FrameSocket& socket = child_->socket();
    if (!now_is_fresh)
      now = Clock::now();
    now_is_fresh = false;
    // The head's deadlines: it has run since head_since_.
    auto soft_deadline =
        head_cancelled_ ? Clock::time_point::max() : after_now(head_since_, options_.soft_timeout);
    auto hard_deadline = after_now(head_since_, options_.hard_timeout);
    auto wedged_deadline = ping_sent == Clock::time_point::max()
                               ? Clock::time_point::max()
                               : ping_sent + options_.wedged_after;
    // A stop request is not a descriptor: look again every 100 ms while one may come.
    auto stop_check =
        head_cancelled_ ? Clock::time_point::max() : now + std::chrono::milliseconds(100);
    const int wait_ms =
        poll_timeout(now, {soft_deadline, hard_deadline, ping_at, wedged_deadline, stop_check});
    Frame frame;
    FrameSocket::Status status;
    try {
      // One blocking recv() until the next deadline: the outcome usually comes well before it.
      status = socket.receive_waiting(
          frame, wait_ms < 0 ? FrameSocket::kForever : std::chrono::milliseconds(wait_ms));
    } catch (const FrameError& error) {
      die("protocol: " + std::string(error.what()));
      continue;
    }
    if (status == FrameSocket::Status::closed) {
      die(std::nullopt);
      continue;
    }
    if (status == FrameSocket::Status::frame) {
      now = Clock::now();
      now_is_fresh = true;
      ping_sent = Clock::time_point::max();
      ping_at = after_now(now, options_.ping_interval);
      try {
        serve(frame, now);
      } catch (const FrameError& error) {
        die("protocol: " + std::string(error.what()));
      }
      continue;
    }
    now = Clock::now();
    if (now >= hard_deadline) {
      die("timeout");
      continue;
    }
    if (ping_sent != Clock::time_point::max() && now - ping_sent >= options_.wedged_after) {
      die("wedged");
      continue;
    }
    const InFlight& head = window_.front();
    if (!head_cancelled_ && (now >= soft_deadline || head.services->stop_requested())) {
      head_cancelled_ = true;
      socket.send(Cancel{head.sequence}, std::chrono::milliseconds(1'000));
    }
    if (now >= ping_at && ping_sent == Clock::time_point::max()) {
      ping_sent = now;
      ping_at = Clock::time_point::max();  // the next one after an answer
      socket.send(Ping{next_ping_++}, std::chrono::milliseconds(1'000));
    }
  }
}

std::optional<WorkerDeath> WorkerProcess::bury_if_dead() {
  if (!child_)
    return std::nullopt;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(child_->pid()), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0)
    return std::nullopt;
  return bury(std::nullopt);
}

WorkerDeath WorkerProcess::bury(std::optional<std::string> override_reason) {
  unsent_.clear();  // for a child that is gone: the window says they did not run
  WorkerDeath death;
  if (!child_)
    return WorkerDeath{override_reason.value_or("not running")};
  if (override_reason)
    child_->kill_group();
  auto exit = child_->reap_within(std::chrono::milliseconds(2'000));
  if (!exit) {
    // The socket closed but the process lingers (it closed descriptor 3 itself): make sure.
    child_->kill_group();
    exit = child_->reap_within(std::chrono::milliseconds(10'000));
  }
  death.reason = override_reason ? *override_reason : exit ? exit->reason() : "lost";
  // A SIGKILL that its cgroup's OOM killer sent.
  if (!override_reason && exit && exit->by_signal && exit->code == SIGKILL && leaf_ &&
      leaf_->oom_kills() > 0)
    death.reason = "oom";
  child_.reset();
  leaf_.reset();
  metrics_.clear();
  return death;
}

void WorkerProcess::stop(std::chrono::steady_clock::time_point deadline) {
  for (const InFlight& message : window_)  // none ran to its end: none is to blame
    done_.emplace_back(message.sequence, Awaited{Awaited::Kind::not_run, {}, {}});
  window_.clear();
  unsent_.clear();
  if (!child_)
    return;
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(deadline - Clock::now(), Clock::duration::zero()));
  };
  if (child_->socket().send(Shutdown{}, left()) && child_->reap_within(left())) {
    child_.reset();
    return;
  }
  child_->kill_group();
  child_->reap_within(std::chrono::milliseconds(10'000));
  child_.reset();
}

}  // namespace warren::isolation
