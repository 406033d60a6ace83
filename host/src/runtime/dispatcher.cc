// See dispatcher.h.
#include "runtime/dispatcher.h"

#include <iterator>
#include <limits>
#include <optional>

#include "observability/log.h"
#include "runtime/dispatch_job.h"
#include "runtime/fatal_signal.h"
#include "runtime/message_context.h"
#include "runtime/trace_context.h"
#include "transport/ids.h"

namespace warren::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// A dispatcher thread stuck in a handler longer than this turns /healthz red (an idle one ticks
// every DispatcherOptions::idle_tick).
constexpr auto kHandlerAllowance = std::chrono::minutes(5);

warren_str abi(const std::string& s) {
  return warren_str{s.data(), s.size()};
}

}  // namespace

Dispatcher::Dispatcher(DispatcherOptions options, const plugin::HandlerInstance& handler,
                       WorkerContext& worker, transport::Publisher* publisher,
                       observability::WorkerMetrics metrics, observability::Health* health)
    : options_(std::move(options)),
      own_runner_(std::make_unique<InProcessRunner>(handler)),
      runner_(*own_runner_),
      worker_(worker),
      publisher_(publisher),
      metrics_(metrics),
      health_(health),
      window_(std::max<std::size_t>(
          1, options_.prefetch / static_cast<std::size_t>(std::max(1, options_.concurrency)))),
      quiet_limit_(std::max<std::size_t>(1, options_.prefetch / 4)),
      inbox_(std::numeric_limits<std::size_t>::max()),
      permits_(true) {}

Dispatcher::Dispatcher(DispatcherOptions options, HandlerRunner& runner, WorkerContext& worker,
                       transport::Publisher* publisher, observability::WorkerMetrics metrics,
                       observability::Health* health)
    : options_(std::move(options)),
      runner_(runner),
      worker_(worker),
      publisher_(publisher),
      metrics_(metrics),
      health_(health),
      window_(std::max<std::size_t>(
          1, options_.prefetch / static_cast<std::size_t>(std::max(1, options_.concurrency)))),
      quiet_limit_(std::max<std::size_t>(1, options_.prefetch / 4)),
      inbox_(std::numeric_limits<std::size_t>::max()),
      permits_(false) {}

Dispatcher::~Dispatcher() {
  inbox_.close();
  for (auto& thread : threads_) {
    if (thread.joinable())
      thread.join();
  }
  std::unique_lock lock(exit_mutex_);
  exit_cv_.wait(lock, [&] { return helpers_ == 0; });
  if (helper_heartbeat_)
    helper_heartbeat_->retire();
}

void Dispatcher::start() {
  const int count = std::max(1, options_.concurrency);
  {
    std::lock_guard lock(exit_mutex_);
    running_threads_ = count;
  }
  if (permits_) {
    inbox_.set_permits(static_cast<std::size_t>(count));
    helper_lane_ = runner_.lane(static_cast<std::size_t>(count));
    if (health_ != nullptr) {
      helper_heartbeat_ = health_->register_loop(
          "dispatcher " + options_.worker + " (on the reading thread)", kHandlerAllowance);
      helper_heartbeat_->idle();
    }
  }
  for (int i = 0; i < count; ++i) {
    std::shared_ptr<observability::LoopHeartbeat> heartbeat;
    if (health_ != nullptr) {
      heartbeat = health_->register_loop("dispatcher " + options_.worker + "#" + std::to_string(i),
                                         kHandlerAllowance);
    }
    const auto thread = static_cast<std::size_t>(i);
    threads_.emplace_back([this, thread, heartbeat] { run_thread(thread, heartbeat); });
  }
}

void Dispatcher::count_received(std::size_t count) {
  metrics_.received->Increment(static_cast<double>(count));
  metrics_.in_flight->Increment(static_cast<double>(count));
  in_flight_.fetch_add(count);
}

void Dispatcher::deliver(std::unique_ptr<transport::Delivery> delivery) {
  count_received(1);
  if (!inbox_.push(delivery)) {
    // Draining: hand it straight back to the broker for another consumer.
    settle(*delivery, transport::Settlement::requeue());
  }
}

void Dispatcher::deliver_all(std::vector<std::unique_ptr<transport::Delivery>>& deliveries) {
  const auto count = deliveries.size();
  count_received(count);
  for (std::size_t i = inbox_.push_all(deliveries); i < count; ++i) {
    // Draining: hand it straight back to the broker for another consumer.
    settle(*deliveries[i], transport::Settlement::requeue());
  }
  deliveries.clear();
}

bool Dispatcher::handlers_are_quick() const noexcept {
  return recent_handler_ns_.load(std::memory_order_relaxed) <= options_.quick_handler.count();
}

bool Dispatcher::deliver_all_to_helper(
    std::vector<std::unique_ptr<transport::Delivery>>& deliveries) {
  if (!helper_lane_ || !handlers_are_quick() || stop_requested_.load()) {
    deliver_all(deliveries);
    return false;
  }
  const auto count = deliveries.size();
  const auto backlog = static_cast<std::int64_t>(inbox_.queued() + count);
  if (backlog * std::max<std::int64_t>(1, recent_handler_ns_.load(std::memory_order_relaxed)) >
      options_.helper_alone.count()) {
    deliver_all(deliveries);  // wakes the threads; the helper still takes its share
    return true;
  }
  count_received(count);
  for (std::size_t i = inbox_.push_all_quietly(deliveries); i < count; ++i)
    settle(*deliveries[i], transport::Settlement::requeue());  // draining, as in deliver_all()
  deliveries.clear();
  return true;
}

bool Dispatcher::enlist_helper() {
  // Counted before the look at the inbox: drain() closes the inbox first, then waits for the
  // helpers counted, so a help either sees it closed or is waited for.
  std::lock_guard lock(exit_mutex_);
  if (!helper_lane_ || inbox_.closed())
    return false;
  ++helpers_;
  return true;
}

std::size_t Dispatcher::help(const std::function<bool()>& enough) {
  std::size_t ran = 0;
  // The permit goes back without waking a thread that waits for one: this thread takes the next
  // delivery itself, and wakes the others once for what it leaves.
  while (auto taken = inbox_.try_pop_with_permit()) {
    if (helper_heartbeat_)
      helper_heartbeat_->tick();
    process(std::move(taken->item), taken->permit, *helper_lane_);
    inbox_.return_permit(taken->permit, /*wake=*/false);
    ++ran;
    if (enough() || !handlers_are_quick())
      break;
  }
  inbox_.wake_if_takeable();
  if (helper_heartbeat_)
    helper_heartbeat_->idle();
  std::lock_guard lock(exit_mutex_);
  --helpers_;
  exit_cv_.notify_all();
  return ran;
}

void Dispatcher::wake_takers() {
  inbox_.wake_if_takeable();
}

void Dispatcher::run_thread(std::size_t thread,
                            std::shared_ptr<observability::LoopHeartbeat> heartbeat) {
  const std::unique_ptr<HandlerLane> lane = runner_.lane(thread);
  const bool windowed = window_ > 1 && lane->takes_a_window();
  if (windowed)
    inbox_.set_taken_together(window_);
  for (;;) {
    if (heartbeat)
      heartbeat->tick();
    if (!lane->ready_for_message(stop_requested_)) {
      // No handler to run it (a worker process that cannot start yet): leave the messages to
      // the other threads, or give them back when the worker is in a crash loop.
      if (runner_.crash_looping())
        give_back_inbox();
      if (inbox_.closed())
        break;
      continue;
    }
    if (windowed) {
      auto first = inbox_.pop_up_to(window_, options_.idle_tick);
      if (first.empty()) {
        if (inbox_.closed())
          break;
        continue;
      }
      if (gathering_.should_gather(first.size(), window_) && !stop_requested_.load()) {
        std::this_thread::sleep_for(WindowGathering::kGatherFor);
        auto more = inbox_.pop_up_to(window_ - first.size(), Clock::duration::zero());
        gathering_.gathered(more.size());
        std::move(more.begin(), more.end(), std::back_inserter(first));
      }
      if (heartbeat)
        heartbeat->tick();
      process_window(std::move(first), thread, *lane, heartbeat.get());
      continue;
    }
    // Thread mode takes each delivery with a permit, whose number is the crash journal slot
    // (the helper, help(), takes one too); process mode's slot is the thread's.
    std::unique_ptr<transport::Delivery> delivery;
    std::size_t slot = thread;
    if (permits_) {
      if (auto taken = inbox_.pop_with_permit_for(options_.idle_tick)) {
        delivery = std::move(taken->item);
        slot = taken->permit;
      }
    } else if (auto popped = inbox_.pop_for(options_.idle_tick)) {
      delivery = std::move(*popped);
    }
    if (!delivery) {
      if (inbox_.closed())
        break;
      continue;
    }
    if (heartbeat)
      heartbeat->tick();
    process(std::move(delivery), slot, *lane);
    if (permits_)
      inbox_.return_permit(slot);
  }
  if (heartbeat)
    heartbeat->retire();
  std::lock_guard lock(exit_mutex_);
  --running_threads_;
  exit_cv_.notify_all();
}

void Dispatcher::process(std::unique_ptr<transport::Delivery> delivery, std::size_t thread,
                         HandlerLane& lane) {
  if (std::unique_ptr<DispatchJob> job = prepare(std::move(delivery)))
    run_to_the_end(*job, thread, lane);
}

std::unique_ptr<DispatchJob> Dispatcher::prepare(std::unique_ptr<transport::Delivery> delivery) {
  auto job =
      std::make_unique<DispatchJob>(std::move(delivery), worker_, publisher_, stop_requested_);
  const transport::InboundMessage& message = job->message();
  const std::string& trace_id = job->context.trace().trace_id;
  if (job->delivery->stale()) {
    // Its channel is gone: the broker redelivers it; running the handler would only duplicate.
    settle(*job->delivery, transport::Settlement::requeue(), trace_id);
    return nullptr;
  }
  if (claim_or_duplicate(message, trace_id, job->claim)) {
    metrics_.duplicates->Increment();
    observability::log(observability::LogLevel::info,
                       {options_.worker, message.message_id, message.attempt, trace_id},
                       "duplicate message: already processed, acked without calling the handler");
    settle(*job->delivery, transport::Settlement::ack(), trace_id);
    return nullptr;
  }

  // Crash accounting: a message the host died on runs alone, or not at all past max_crashes.
  if (crash_.watch != nullptr) {
    job->identity = CrashIdentity::of(options_.worker, message);
    job->suspect = crash_.watch->suspicion(*job->identity);
    if (job->suspect && job->suspect->crashes >= options_.max_crashes) {
      dead_letter_crasher(*job->delivery, *job->identity, *job->suspect, job->context.trace());
      return nullptr;
    }
  }

  warren_message& view = job->view;
  view.struct_size = sizeof(view);
  view.body = abi(message.body);
  view.routing_key = abi(message.routing_key);
  view.exchange = abi(message.exchange);
  view.message_id = abi(message.message_id);
  view.content_type = abi(message.content_type);
  view.redelivered = message.redelivered ? 1 : 0;
  job->attempt = std::max<std::uint32_t>(1, message.attempt);
  return job;
}

void Dispatcher::begin_run(DispatchJob& job) {
  job.view.attempt = job.attempt;
  job.context.begin_attempt(job.attempt);
}

Dispatcher::AfterRun Dispatcher::after_run(DispatchJob& job,
                                           const std::optional<std::string>& died) {
  const transport::InboundMessage& message = job.message();
  const std::string& trace_id = job.context.trace().trace_id;
  if (died) {
    job.crashes = runner_.count_crash(CrashIdentity::of(options_.worker, message));
    if (job.crashes >= options_.max_crashes) {
      job.crashed_for_good = died;
      return AfterRun::finished;
    }
    observability::log(
        observability::LogLevel::warn, {options_.worker, message.message_id, job.attempt, trace_id},
        "its worker process died (" + *died + ") running this message, " +
            std::to_string(job.crashes) + " time(s) of max_crashes " +
            std::to_string(options_.max_crashes) + ": running it again in a new process");
    return AfterRun::run_again_in_a_fresh_process;
  }
  count_exception(job.context.error_kind());

  const HandlerResult result = job.context.result();
  RetryDecision decision = decide(options_.retry, result, job.attempt, transport::random_unit());
  if (result.kind != HandlerResult::Kind::ack) {
    const observability::LogFields fields{options_.worker, message.message_id, job.attempt,
                                          trace_id};
    const bool final = decision.settlement.kind == transport::Settlement::Kind::dead_letter;
    std::string text = final ? "dead-lettering: " : "will retry: ";
    text += result.reason.empty() ? "the handler asked for a retry" : result.reason;
    if (decision.settlement.kind == transport::Settlement::Kind::retry_later) {
      text += " (next attempt in " + std::to_string(decision.settlement.delay.count()) + " ms)";
    }
    observability::log(final ? observability::LogLevel::error : observability::LogLevel::warn,
                       fields, text);
  }
  if (decision.run_again_now && !stop_requested_.load()) {
    ++job.attempt;
    return AfterRun::run_again;
  }
  if (decision.run_again_now) {
    // Stopping: no in-process retry; let the broker hold it for the next start.
    decision.settlement.kind = transport::Settlement::Kind::retry_later;
    decision.settlement.next_attempt = job.attempt + 1;
    decision.settlement.delay = std::chrono::milliseconds(0);
  }
  job.settlement = std::move(decision.settlement);
  return AfterRun::finished;
}

void Dispatcher::run_to_the_end(DispatchJob& job, std::size_t thread, HandlerLane& lane) {
  const transport::InboundMessage& message = job.message();
  // Held while the handler runs: shared, or alone for a suspect. The journal slot says which
  // message this thread is inside, for the next start if the host dies here.
  std::optional<SoloGate::Pass> pass;
  if (job.identity) {
    pass.emplace(job.suspect ? solo_gate_.alone() : solo_gate_.shared());
    crash_.watch->enter(crash_.first_slot + thread, *job.identity);
  }
  if (job.suspect) {
    observability::log(
        observability::LogLevel::warn,
        {options_.worker, message.message_id, message.attempt, job.context.trace().trace_id},
        "the host died " + std::to_string(job.suspect->crashes) +
            " time(s) while handling this message: running it alone (max_crashes " +
            std::to_string(options_.max_crashes) + ")");
  }
  for (;;) {
    begin_run(job);
    const auto started = Clock::now();
    const std::optional<std::string> died = lane.run(job.view, message, job.context);
    const auto ran_for = Clock::now() - started;
    metrics_.handler_duration->Observe(std::chrono::duration<double>(ran_for).count());
    // A moving average over about the last eight runs; racing writers lose an update at worst.
    const std::int64_t recent = recent_handler_ns_.load(std::memory_order_relaxed);
    recent_handler_ns_.store(
        recent +
            (std::chrono::duration_cast<std::chrono::nanoseconds>(ran_for).count() - recent) / 8,
        std::memory_order_relaxed);
    const AfterRun next = after_run(job, died);
    if (next == AfterRun::run_again)
      continue;
    if (next == AfterRun::run_again_in_a_fresh_process) {
      if (!wait_for_lane(lane)) {
        job.give_back = true;
        break;
      }
      continue;
    }
    break;
  }
  if (job.identity) {
    crash_.watch->leave(crash_.first_slot + thread);
    // It ran and the host survived: acked or dead-lettered, it is no suspect any more (a retry
    // keeps the suspicion: the next attempt runs alone too). Cleared before the pass goes: the
    // next suspect may crash the host at once, before this message's ack is even sent, and a
    // record cleared only after the ack would then outlive a message the broker no longer has.
    if (job.suspect && !job.give_back &&
        (job.crashed_for_good || job.settlement.kind == transport::Settlement::Kind::ack ||
         job.settlement.kind == transport::Settlement::Kind::dead_letter))
      crash_.watch->clear(*job.identity);
    pass.reset();
  }
  finish(job);
}

void Dispatcher::finish(DispatchJob& job) {
  const transport::InboundMessage& message = job.message();
  const std::string& trace_id = job.context.trace().trace_id;
  if (job.crashes > 0 && !job.crashed_for_good)
    runner_.forget_crashes(CrashIdentity::of(options_.worker, message));  // it ran in the end
  if (job.crashed_for_good) {
    job.claim.reset();
    runner_.forget_crashes(CrashIdentity::of(options_.worker, message));
    dead_letter_child_crasher(*job.delivery, *job.crashed_for_good, job.crashes,
                              job.context.trace());
    return;
  }
  if (job.give_back) {
    job.claim.reset();
    settle(*job.delivery, transport::Settlement::requeue(), trace_id);
    return;
  }
  transport::Settlement& settlement = job.settlement;
  settlement.worker = options_.worker;
  settlement.attempt = job.attempt;
  // Keep the trace the host started for this message across its retries and dead-lettering.
  job.context.trace().carry_into(message, settlement);
  if (job.claim) {
    // Before the ack: a crash between the two makes the redelivery a duplicate, not a rerun.
    if (settlement.kind == transport::Settlement::Kind::ack)
      remember_processed(*job.claim, message, trace_id);
    job.claim.reset();  // not acked: released, so the retry (or another copy) runs the handler
  }
  settle(*job.delivery, settlement, trace_id);
}

void Dispatcher::dead_letter_crasher(transport::Delivery& delivery, const CrashIdentity& identity,
                                     const CrashRecord& record, const TraceContext& trace) {
  const transport::InboundMessage& message = delivery.message();
  const std::string_view trace_id = trace.trace_id;
  const std::string crashes = std::to_string(record.crashes);
  transport::Settlement settlement;
  settlement.kind = transport::Settlement::Kind::dead_letter;
  settlement.reason = "crash: the host died " + crashes + " time" +
                      (record.crashes == 1 ? "" : "s") + " while handling this message";
  settlement.worker = options_.worker;
  settlement.attempt = std::max<std::uint32_t>(1, message.attempt);
  settlement.extra_headers.emplace_back("x-warren-crashes", crashes);
  trace.carry_into(message, settlement);
  observability::log(observability::LogLevel::error,
                     {options_.worker, message.message_id, settlement.attempt, trace_id},
                     "dead-lettering without running it: " + settlement.reason + " (max_crashes " +
                         std::to_string(options_.max_crashes) +
                         ", last fatal signal: " + signal_name(record.last_signal) + ")");
  if (settle(delivery, settlement, trace_id)) {
    if (crash_.dead_lettered != nullptr)
      crash_.dead_lettered->Increment();
    crash_.watch->clear(identity);
  }
}

bool Dispatcher::wait_for_lane(HandlerLane& lane) {
  while (!lane.ready_for_message(stop_requested_)) {
    if (stop_requested_.load() || runner_.crash_looping() || inbox_.closed())
      return false;
  }
  return true;
}

void Dispatcher::give_back_inbox() {
  for (auto& delivery : inbox_.take_all())
    settle(*delivery, transport::Settlement::requeue());
}

void Dispatcher::dead_letter_child_crasher(transport::Delivery& delivery, const std::string& death,
                                           int crashes, const TraceContext& trace) {
  const transport::InboundMessage& message = delivery.message();
  const std::string count = std::to_string(crashes);
  transport::Settlement settlement;
  settlement.kind = transport::Settlement::Kind::dead_letter;
  settlement.reason = child_crash_reason(death, crashes);
  settlement.worker = options_.worker;
  settlement.attempt = std::max<std::uint32_t>(1, message.attempt);
  settlement.extra_headers.emplace_back("x-warren-crashes", count);
  trace.carry_into(message, settlement);
  observability::log(observability::LogLevel::error,
                     {options_.worker, message.message_id, settlement.attempt, trace.trace_id},
                     "dead-lettering: " + settlement.reason + " (max_crashes " +
                         std::to_string(options_.max_crashes) + ")");
  if (settle(delivery, settlement, trace.trace_id) && crash_.dead_lettered != nullptr)
    crash_.dead_lettered->Increment();
}

bool Dispatcher::claim_or_duplicate(const transport::InboundMessage& message,
                                    std::string_view trace_id,
                                    std::unique_ptr<ProcessingClaim>& claim) noexcept {
  if (duplicate_filter_ == nullptr || message.message_id.empty())
    return false;
  try {
    claim = duplicate_filter_->claim(message);
    return claim == nullptr;
  } catch (const std::exception& e) {
    observability::log(observability::LogLevel::warn,
                       {options_.worker, message.message_id, message.attempt, trace_id},
                       std::string("cannot check the processed-message store (") + e.what() +
                           "); handling the message anyway");
    return false;
  }
}

void Dispatcher::remember_processed(ProcessingClaim& claim,
                                    const transport::InboundMessage& message,
                                    std::string_view trace_id) noexcept {
  try {
    claim.processed();
  } catch (const std::exception& e) {
    observability::log(observability::LogLevel::warn,
                       {options_.worker, message.message_id, message.attempt, trace_id},
                       std::string("cannot record the message as processed (") + e.what() +
                           "); acking it anyway: a redelivery would run the handler again");
  }
}

void Dispatcher::count_settled(transport::Settlement::Kind kind) noexcept {
  switch (kind) {
    case transport::Settlement::Kind::ack:
      metrics_.settled_ack->Increment();
      break;
    case transport::Settlement::Kind::retry_later:
      metrics_.settled_retry->Increment();
      break;
    case transport::Settlement::Kind::dead_letter:
      metrics_.settled_dead_letter->Increment();
      break;
    case transport::Settlement::Kind::requeue:
      metrics_.settled_requeue->Increment();
      break;
  }
}

bool Dispatcher::settle(transport::Delivery& delivery, const transport::Settlement& settlement,
                        std::string_view trace_id) noexcept {
  bool settled = false;
  std::string failure;
  try {
    // More deliveries wait: this thread or another settles again at once, and the last of the
    // burst (the inbox empty) wakes the transport's I/O thread for all of them (issue 17). Not
    // more than a quarter of the prefetch in a row, though: a burst as long as the prefetch
    // held every ack back until the broker had nothing left to send, and the worker then idled
    // (stop and go at prefetch 200).
    const bool soon = inbox_.holds_items() &&
                      quiet_settles_.fetch_add(1, std::memory_order_relaxed) + 1 < quiet_limit_;
    if (soon) {
      delivery.settle_soon(settlement);
    } else {
      quiet_settles_.store(0, std::memory_order_relaxed);
      delivery.settle(settlement);
    }
    count_settled(settlement.kind);
    settled = true;
  } catch (const transport::SettledOtherwise& e) {
    // The transport says what it did instead (requeued after a backoff, say): counted as that.
    count_settled(e.instead());
    failure = std::string("could not ") + to_string(settlement.kind) + " the message: " + e.what();
  } catch (const std::exception& e) {
    failure = std::string("could not ") + to_string(settlement.kind) +
              " the message; it stays unacked and the broker will redeliver it: " + e.what();
  }
  if (!failure.empty()) {
    // A message settled without being handled (drain, requeue) has no context: read its trace.
    const std::string own_trace_id =
        trace_id.empty() ? TraceContext::from_headers(delivery.message().headers).trace_id
                         : std::string(trace_id);
    observability::log(
        observability::LogLevel::error,
        {options_.worker, delivery.message().message_id, settlement.attempt, own_trace_id},
        failure);
  }
  metrics_.in_flight->Decrement();
  in_flight_.fetch_sub(1);
  return settled;
}

void Dispatcher::count_exception(std::uint32_t error_kind) noexcept {
  switch (error_kind) {
    case WARREN_ERROR_STD_EXCEPTION:
      metrics_.exceptions_std->Increment();
      break;
    case WARREN_ERROR_PERMANENT:
      metrics_.exceptions_permanent->Increment();
      break;
    case WARREN_ERROR_UNKNOWN:
      metrics_.exceptions_unknown->Increment();
      break;
    default:
      break;
  }
}

bool Dispatcher::drain(std::chrono::steady_clock::time_point deadline) {
  inbox_.close();
  for (auto& delivery : inbox_.take_all())
    settle(*delivery, transport::Settlement::requeue());
  std::unique_lock lock(exit_mutex_);
  return exit_cv_.wait_until(lock, deadline,
                             [&] { return running_threads_ == 0 && helpers_ == 0; });
}

}  // namespace warren::runtime
