// One worker's dispatcher: takes deliveries from the transport, runs the plugin's handler on
// `concurrency` threads, turns what the handler did into a settlement (retry_decision.h) and
// hands it back to the transport. Nothing a handler does, throws or returns escapes: the worker
// and the host keep going.
//
// In-flight deliveries are bounded by the transport (prefetch per channel incarnation), not by
// the inbox: after a reconnect the old incarnation's deliveries still wait in the inbox beside a
// full prefetch of new ones, and a deliver() that blocked would stall the broker's I/O thread (no
// heartbeats, no acks) until a handler finished. So deliver() never blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/config.h"
#include "observability/health.h"
#include "observability/metrics.h"
#include "plugin/handler_instance.h"
#include "runtime/bounded_queue.h"
#include "runtime/crash_watch.h"
#include "runtime/handler_runner.h"
#include "runtime/solo_gate.h"
#include "runtime/trace_context.h"
#include "runtime/window_gathering.h"
#include "runtime/worker_context.h"
#include "transport/transport.h"

namespace warren::runtime {

struct DispatchJob;

struct DispatcherOptions {
  std::string worker;
  std::string queue;
  std::uint16_t prefetch = 20;
  int concurrency = 1;
  config::RetryPolicy retry;
  int max_crashes = 3;  // with crash accounting: dead-letter a message after this many host deaths
  // How often an idle thread wakes unasked (its /healthz heartbeat, a crash loop's give-back).
  // Such a thread takes what it finds: tests that assert which thread runs what set it long.
  std::chrono::milliseconds idle_tick{500};
  // Thread mode (issue 17). Handlers that ran this long on average, lately, are left to the
  // dispatcher's threads: the transport's reading thread would run them one at a time, away
  // from its socket (help()). A hand-over costs a few microseconds of CPU, so a handler well
  // above that gains little from help.
  std::chrono::nanoseconds quick_handler{25'000};
  // What the helper runs alone: a backlog it gets through in this time at the handlers' recent
  // pace. A bigger one wakes the dispatcher's threads too, to take their share beside it (on a
  // machine with cores to spare, handlers of 10-25 µs would otherwise run one at a time
  // however large `concurrency` is).
  std::chrono::nanoseconds helper_alone{250'000};
};

// Crash accounting (crash_watch.h) for one dispatcher: the host's watch, the journal slot of the
// dispatcher's first thread (thread i uses first_slot + i), and the counter of its dead letters
// for reason "crash".
struct CrashHooks {
  CrashWatch* watch = nullptr;  // nullptr: no crash accounting
  std::size_t first_slot = 0;
  prometheus::Counter* dead_lettered = nullptr;
};

// Idempotent consumers: checked before the handler runs, and told about a message the handler
// acked just before the ack goes to the broker (so a crash in between redelivers a message that
// is then recognised, never one that was processed but not recorded). Both may throw: a failed
// check runs the handler anyway (at-least-once), a failed record still acks.
// A message id held by the one delivery whose handler runs it (DuplicateFilter::claim).
class ProcessingClaim {
 public:
  // Without processed(): released, not recorded (the handler failed; its retry must run).
  virtual ~ProcessingClaim() = default;
  // The handler succeeded and the message is about to be acked: record it as processed.
  virtual void processed() = 0;
};

class DuplicateFilter {
 public:
  virtual ~DuplicateFilter() = default;
  // Checks and claims the message id for this worker in one step, so two copies handled at the
  // same moment cannot both run: nullptr when the id was already processed (a duplicate), else
  // the claim, held until processed() or destruction. Throws when the store cannot answer.
  virtual std::unique_ptr<ProcessingClaim> claim(const transport::InboundMessage& message) = 0;
};

class Dispatcher final : public transport::DeliverySink {
 public:
  // `runner` (handler_runner.h) runs the handler: in the host's threads or in child processes.
  Dispatcher(DispatcherOptions options, HandlerRunner& runner, WorkerContext& worker,
             transport::Publisher* publisher, observability::WorkerMetrics metrics,
             observability::Health* health);
  // In the host's threads (isolation = "thread").
  Dispatcher(DispatcherOptions options, const plugin::HandlerInstance& handler,
             WorkerContext& worker, transport::Publisher* publisher,
             observability::WorkerMetrics metrics, observability::Health* health);
  ~Dispatcher() override;
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void set_duplicate_filter(DuplicateFilter* filter) { duplicate_filter_ = filter; }
  // Before start(). Suspects run alone; those at max_crashes are dead-lettered unrun.
  void set_crash_hooks(CrashHooks hooks) { crash_ = hooks; }

  void start();
  // DeliverySink: queues the delivery; after drain() began, hands it straight back (requeue).
  void deliver(std::unique_ptr<transport::Delivery> delivery) override;
  void deliver_all(std::vector<std::unique_ptr<transport::Delivery>>& deliveries) override;
  // The transport's reading thread as one more taker (issue 17), in thread mode while handlers
  // are fast: it takes deliveries with the same permits as the dispatcher's threads (so never
  // more than `concurrency` handlers at once, and in order at concurrency 1), on a lane of its
  // own, with the crash journal slot of the permit. A backlog the helper would take more than a
  // quarter of a millisecond to run alone wakes the dispatcher's threads as well.
  bool deliver_all_to_helper(
      std::vector<std::unique_ptr<transport::Delivery>>& deliveries) override;
  bool enlist_helper() override;
  std::size_t help(const std::function<bool()>& enough) override;
  void wake_takers() override;

  // Context::stop_requested() turns true for running handlers.
  void request_stop() noexcept { stop_requested_.store(true); }
  // Stops taking deliveries, requeues those not started, and waits until running handlers have
  // settled or `deadline` passes. True when everything settled.
  bool drain(std::chrono::steady_clock::time_point deadline);

  std::size_t in_flight() const noexcept { return in_flight_.load(); }
  // Crash suspects waiting for the worker's other handlers to finish, to run alone.
  int suspects_waiting() const { return solo_gate_.waiting_alone(); }
  const DispatcherOptions& options() const noexcept { return options_; }

 private:
  void run_thread(std::size_t thread, std::shared_ptr<observability::LoopHeartbeat> heartbeat);
  // Counts deliveries in, as received and in flight.
  void count_received(std::size_t count);
  // Whether handlers have lately been fast enough for the reading thread to run them (help()).
  bool handlers_are_quick() const noexcept;
  // `thread`: the dispatcher thread's index (its crash journal slot); `lane` its way to the
  // handler. Runs one message to its settlement.
  void process(std::unique_ptr<transport::Delivery> delivery, std::size_t thread,
               HandlerLane& lane);

  // The steps of one message, shared by process() and the window. prepare() settles what needs
  // no handler (stale, a duplicate, a host-crash suspect at max_crashes: nullptr) and returns
  // the job otherwise; begin_run() before each run; after_run() decides what the run (or the
  // death of its process, DIED) means; finish() settles the job.
  enum class AfterRun { finished, run_again, run_again_in_a_fresh_process };
  std::unique_ptr<DispatchJob> prepare(std::unique_ptr<transport::Delivery> delivery);
  void begin_run(DispatchJob& job);
  AfterRun after_run(DispatchJob& job, const std::optional<std::string>& died);
  void finish(DispatchJob& job);
  // Runs JOB on LANE with nothing else in flight on this thread (alone, for a suspect).
  void run_to_the_end(DispatchJob& job, std::size_t thread, HandlerLane& lane);

  // The window (dispatcher_window.cc): a lane that takes one (a worker process) holds up to
  // window_ messages at once; the thread keeps it full from the inbox, awaits them in order and
  // settles each as it is done. FIRST: the deliveries taken to begin with.
  void process_window(std::vector<std::unique_ptr<transport::Delivery>> first, std::size_t thread,
                      HandlerLane& lane, observability::LoopHeartbeat* heartbeat);
  // After the process running a message died: waits until `lane` has a fresh one. False when the
  // worker stops or is in a crash loop (the message must be given back).
  bool wait_for_lane(HandlerLane& lane);
  // Requeues every delivery the inbox holds (a worker in a crash loop gives back what it holds).
  void give_back_inbox();
  // Dead-letters a message whose worker process died max_crashes times running it.
  void dead_letter_child_crasher(transport::Delivery& delivery, const std::string& death,
                                 int crashes, const TraceContext& trace);
  // Dead-letters a message the host died on max_crashes times, without running it.
  void dead_letter_crasher(transport::Delivery& delivery, const CrashIdentity& identity,
                           const CrashRecord& record, const TraceContext& trace);
  // trace_id: for the log line if settling fails (empty: read from the message's headers).
  // True when the transport took the settlement (false too when it settled it otherwise: a
  // retry or dead letter it could not publish and requeued instead).
  bool settle(transport::Delivery& delivery, const transport::Settlement& settlement,
              std::string_view trace_id = {}) noexcept;
  void count_settled(transport::Settlement::Kind kind) noexcept;
  void count_exception(std::uint32_t error_kind) noexcept;
  // True for a duplicate. Otherwise `claim` holds the id while the handler runs (null without a
  // filter, or when the store cannot answer: then the message is handled anyway).
  bool claim_or_duplicate(const transport::InboundMessage& message, std::string_view trace_id,
                          std::unique_ptr<ProcessingClaim>& claim) noexcept;
  void remember_processed(ProcessingClaim& claim, const transport::InboundMessage& message,
                          std::string_view trace_id) noexcept;

  const DispatcherOptions options_;
  std::unique_ptr<HandlerRunner> own_runner_;  // isolation = "thread": made from the handler
  HandlerRunner& runner_;
  WorkerContext& worker_;
  transport::Publisher* publisher_;
  observability::WorkerMetrics metrics_;
  observability::Health* health_;
  DuplicateFilter* duplicate_filter_ = nullptr;
  CrashHooks crash_;
  SoloGate solo_gate_;

  // A process lane's window: its share of the prefetch (prefetch / concurrency, at least 1).
  const std::size_t window_;
  // Settlements in a row that may leave the transport's I/O thread asleep (settle()).
  const std::size_t quiet_limit_;
  std::atomic<std::size_t> quiet_settles_{0};
  BoundedQueue<std::unique_ptr<transport::Delivery>> inbox_;
  WindowGathering gathering_;  // a window begun small waits a moment for more (window_gathering.h)
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::size_t> in_flight_{0};

  // isolation = "thread": deliveries are taken with permits (bounded_queue.h), and the
  // transport's reading thread may help, on its own lane.
  const bool permits_;
  std::unique_ptr<HandlerLane> helper_lane_;
  // /healthz: the helper stuck in a handler past the allowance, as a dispatcher thread would be.
  std::shared_ptr<observability::LoopHeartbeat> helper_heartbeat_;
  // How long handlers ran lately, in ns (a moving average; written by whoever ran one).
  std::atomic<std::int64_t> recent_handler_ns_{0};

  std::mutex exit_mutex_;
  std::condition_variable exit_cv_;
  int running_threads_ = 0;
  int helpers_ = 0;  // help() calls under way: drain() and the destructor wait for them
};

}  // namespace warren::runtime
